"""The Git source reader against real repositories made in tmp_path; the "remote" is a local repository
under an allowed root. No database."""

from __future__ import annotations

import ipaddress
import os
import subprocess
from pathlib import Path

import pytest

from knowledge.source_fetch.git import (
    Changes,
    GitFailed,
    GitMirror,
    GitPolicy,
    GitRefused,
    GitTooLarge,
    check_git_url,
    file_url,
    glob_match,
)

DOCS = ["docs/**/*.md"]


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch) -> Path:
    # The developer's own git config (signing, templates, hooks) must not change what these tests see.
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="T",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="T",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    # The test's own commits must not run the hostile hooks it plants (the mirror's git is under test).
    command = ["git", "-C", str(repo), "-c", "core.hooksPath=/dev/null", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip()


def write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)


def commit(repo: Path, message: str = "change") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_origin(tmp_path: Path, files: dict[str, str], name: str = "origin") -> Path:
    origin = tmp_path / name
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    write(origin, files)
    return origin


@pytest.fixture
def policy(tmp_path) -> GitPolicy:
    return GitPolicy(allowed_roots=(tmp_path,), timeout_s=60)


@pytest.fixture
def origin(tmp_path) -> Path:
    return make_origin(
        tmp_path,
        {"docs/a.md": "# A\n", "docs/sub/b.md": "# B\n", "README.md": "readme\n", "src/x.py": "x = 1\n"},
    )


def mirror_of(origin: Path, tmp_path: Path, policy: GitPolicy, branch: str = "main") -> GitMirror:
    return GitMirror(tmp_path / "var" / "sources" / "1" / "repo.git", str(origin), branch, policy)


# --- check_git_url ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["https://github.com/o/r.git", "ssh://git@example.com/o/r.git", "git@github.com:o/r.git"],
)
def test_remote_urls_are_accepted(url):
    # Their form only: this machine resolves no public names (the host checks are tested below).
    check_git_url(url, GitPolicy(check_hosts=False))


@pytest.mark.security
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://127.0.0.1/r.git", "the address 127.0.0.1 is a loopback address"),
        ("https://10.0.0.1/r.git", "is a private address"),
        ("https://169.254.169.254/r.git", "the cloud metadata address"),
        ("https://localhost/r.git", "KNOWLEDGE_SOURCES_ALLOWED_NETWORKS"),
        ("git@127.0.0.1:o/r.git", "loopback address"),
        ("https://nothing.invalid/r.git", "could not be resolved"),
    ],
)
def test_repository_hosts_on_the_servers_own_network_are_refused(url, reason):
    with pytest.raises(GitRefused) as refused:
        check_git_url(url, GitPolicy())
    assert reason in refused.value.reason


def test_an_allowed_network_lets_a_repository_on_it_through():
    check_git_url(
        "https://127.0.0.1/r.git", GitPolicy(allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),))
    )


@pytest.mark.security
@pytest.mark.parametrize(
    "url",
    [
        "file:///etc",
        "/tmp/x",
        "--upload-pack=touch /tmp/pwned",
        "ext::sh -c touch% /tmp/pwned",
        "fd::3",
        "http://example.com/r.git",
        "git://example.com/r.git",
        "ssh://-oProxyCommand=touch%20/tmp/pwned/r.git",
        "git@-oProxyCommand=x:r.git",
        "relative/repo",
        "https://example.com/r.git\n--upload-pack=x",
        "",
    ],
)
def test_dangerous_or_local_urls_are_refused(url):
    with pytest.raises(GitRefused) as refused:
        check_git_url(url, GitPolicy())
    assert refused.value.reason


def test_a_local_path_is_refused_with_the_setting_to_change():
    with pytest.raises(GitRefused, match="KNOWLEDGE_SOURCES_FOLDER_ROOTS"):
        check_git_url("/tmp/x", GitPolicy(allowed_roots=()))


def test_a_local_path_inside_an_allowed_root_is_accepted(tmp_path):
    (tmp_path / "repo").mkdir()
    check_git_url(str(tmp_path / "repo"), GitPolicy(allowed_roots=(tmp_path,)))
    check_git_url((tmp_path / "repo").as_uri(), GitPolicy(allowed_roots=(tmp_path,)))


@pytest.mark.security
def test_a_symlink_out_of_the_allowed_root_is_refused(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "escape").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(GitRefused, match="KNOWLEDGE_SOURCES_FOLDER_ROOTS"):
        check_git_url(str(root / "escape"), GitPolicy(allowed_roots=(root,)))
    with pytest.raises(GitRefused):
        check_git_url(str(root / ".." / "elsewhere"), GitPolicy(allowed_roots=(root,)))


# --- The mirror -------------------------------------------------------------------------------------


def test_update_lists_matching_files_and_reads_them(origin, tmp_path, policy):
    sha = commit(origin)
    mirror = mirror_of(origin, tmp_path, policy)

    assert mirror.update() == sha
    files, skipped = mirror.files(sha, DOCS)

    assert sorted(f.path for f in files) == ["docs/a.md", "docs/sub/b.md"]
    assert skipped == []
    a = next(f for f in files if f.path == "docs/a.md")
    assert a.size == len("# A\n")
    assert mirror.read(a.blob_sha) == b"# A\n"


def test_changes_between_two_updates(origin, tmp_path, policy):
    old = commit(origin)
    mirror = mirror_of(origin, tmp_path, policy)
    mirror.update()
    write(origin, {"docs/a.md": "# A changed\n", "docs/c.md": "# C\n", "src/y.py": "y = 2\n"})
    (origin / "docs" / "sub" / "b.md").unlink()
    new = commit(origin)

    assert mirror.update() == new
    assert mirror.changes(old, new, DOCS) == Changes(
        added=["docs/c.md"], modified=["docs/a.md"], deleted=["docs/sub/b.md"]
    )


def test_a_rename_is_a_deletion_and_an_addition(origin, tmp_path, policy):
    old = commit(origin)
    git(origin, "mv", "docs/a.md", "docs/renamed.md")
    new = commit(origin)
    mirror = mirror_of(origin, tmp_path, policy)
    mirror.update()

    assert mirror.changes(old, new, DOCS) == Changes(added=["docs/renamed.md"], deleted=["docs/a.md"])


def test_force_pushed_history_is_followed(origin, tmp_path, policy):
    commit(origin)
    mirror = mirror_of(origin, tmp_path, policy)
    mirror.update()
    write(origin, {"docs/a.md": "# rewritten\n"})
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "--amend", "-m", "rewritten")

    assert mirror.update() == git(origin, "rev-parse", "HEAD")


@pytest.mark.security
def test_hooks_are_never_run(origin, tmp_path, policy, isolated_home):
    marker = tmp_path / "hook-ran"
    hook = f"#!/bin/sh\ntouch {marker}\n"
    # Hooks in the source repository itself, and a config pointing at more of them...
    for name in ("post-checkout", "post-merge", "reference-transaction", "post-update", "pre-receive"):
        (origin / ".git" / "hooks" / name).write_text(hook)
        (origin / ".git" / "hooks" / name).chmod(0o755)
    git(origin, "config", "uploadpack.packObjectsHook", f"touch {marker};")
    # ...and hook templates from the operator's own config, which would be copied into the mirror
    # (reference-transaction runs on every ref update of a clone or fetch).
    templates = tmp_path / "templates" / "hooks"
    templates.mkdir(parents=True)
    for name in ("reference-transaction", "post-checkout"):
        (templates / name).write_text(hook)
        (templates / name).chmod(0o755)
    (isolated_home / ".gitconfig").write_text(f"[init]\n\ttemplateDir = {templates.parent}\n")
    commit(origin)
    mirror = mirror_of(origin, tmp_path, policy)

    mirror.update()
    write(origin, {"docs/d.md": "# D\n"})
    commit(origin)
    mirror.update()

    assert not marker.exists()
    assert not (mirror.path / "hooks").exists()


@pytest.mark.security
def test_submodules_are_not_fetched(origin, tmp_path, policy):
    library = make_origin(tmp_path, {"docs/inside.md": "# inside the submodule\n"}, name="library")
    commit(library)
    inside_blob = git(library, "rev-parse", "HEAD:docs/inside.md")
    git(origin, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(library), "docs/lib")
    sha = commit(origin)
    mirror = mirror_of(origin, tmp_path, policy)

    mirror.update()
    files, skipped = mirror.files(sha, ["docs/**"])

    assert "docs/lib/docs/inside.md" not in [f.path for f in files]
    assert [path for path, _ in skipped] == ["docs/lib"]
    assert "submodule" in skipped[0][1]
    assert not (mirror.path / "modules").exists()
    with pytest.raises(GitFailed):
        mirror.read(inside_blob)


@pytest.mark.security
def test_a_symlink_is_skipped_and_its_blob_is_only_the_target_path(origin, tmp_path, policy):
    (origin / "docs" / "passwd.md").symlink_to("/etc/passwd")
    sha = commit(origin)
    mirror = mirror_of(origin, tmp_path, policy)
    mirror.update()

    files, skipped = mirror.files(sha, DOCS)

    assert "docs/passwd.md" not in [f.path for f in files]
    assert skipped == [("docs/passwd.md", "a symbolic link (links are not followed)")]
    assert mirror.read(git(origin, "rev-parse", "HEAD:docs/passwd.md")) == b"/etc/passwd"


def test_an_unknown_branch_fails_naming_it(origin, tmp_path, policy):
    commit(origin)
    with pytest.raises(GitFailed, match="nope") as failed:
        mirror_of(origin, tmp_path, policy, branch="nope").update()
    assert "clone" in failed.value.reason

    mirror_of(origin, tmp_path, policy).update()
    with pytest.raises(GitFailed, match="nope"):  # the fetch of an existing mirror says the same
        mirror_of(origin, tmp_path, policy, branch="nope").update()


@pytest.mark.security
@pytest.mark.parametrize("branch", ["--upload-pack=touch /tmp/pwned", "a..b", "", "main with space"])
def test_a_bad_branch_name_is_refused(origin, tmp_path, policy, branch):
    commit(origin)
    with pytest.raises(GitRefused):
        mirror_of(origin, tmp_path, policy, branch=branch).update()


@pytest.mark.security
def test_a_local_origin_outside_the_allowed_roots_is_refused_before_git_runs(origin, tmp_path):
    commit(origin)
    mirror = mirror_of(origin, tmp_path, GitPolicy(allowed_roots=()))
    with pytest.raises(GitRefused, match="KNOWLEDGE_SOURCES_FOLDER_ROOTS"):
        mirror.update()
    assert not mirror.path.exists()


@pytest.mark.security
def test_revisions_must_be_object_ids(origin, tmp_path, policy):
    sha = commit(origin)
    mirror = mirror_of(origin, tmp_path, policy)
    mirror.update()
    with pytest.raises(GitRefused):
        mirror.files("--output=/tmp/pwned", DOCS)
    with pytest.raises(GitRefused):
        mirror.changes("HEAD~1", sha, DOCS)
    with pytest.raises(GitRefused):
        mirror.read("-p")


def test_large_files_are_skipped_and_not_read(origin, tmp_path):
    sha = commit(origin)
    mirror = mirror_of(origin, tmp_path, GitPolicy(allowed_roots=(tmp_path,), max_file_bytes=4))
    mirror.update()

    files, skipped = mirror.files(sha, ["*.md"])

    assert [f.path for f in files] == ["docs/a.md", "docs/sub/b.md"]
    assert skipped == [("README.md", "7 bytes, more than the 4 allowed")]
    with pytest.raises(GitRefused, match="more than the 4 allowed"):
        mirror.read(git(origin, "rev-parse", "HEAD:README.md"))


def test_too_many_matching_files_are_refused(origin, tmp_path):
    sha = commit(origin)
    mirror = mirror_of(origin, tmp_path, GitPolicy(allowed_roots=(tmp_path,), max_files=1))
    mirror.update()

    with pytest.raises(GitRefused, match="2 files match, more than the 1 allowed"):
        mirror.files(sha, DOCS)
    assert len(mirror.files(sha, ["README.md"])[0]) == 1


def test_a_timeout_stops_git(origin, tmp_path):
    commit(origin)
    mirror = mirror_of(origin, tmp_path, GitPolicy(allowed_roots=(tmp_path,), timeout_s=0.0001))
    with pytest.raises(GitFailed, match="took longer than"):
        mirror.update()


# The upload-pack side sends part of the pack, then holds the stream open without another byte: a
# transfer cut off midway. git honours this hook only in the global config (never in the served
# repository's own), so the test's isolated home carries it while ``stall(True)``.
_STALL = """#!/bin/sh
"$@" | head -c 262144
exec sleep 600
"""


@pytest.fixture
def stall(isolated_home, tmp_path):
    hook = tmp_path / "stall.sh"
    hook.write_text(_STALL)
    hook.chmod(0o755)
    config = isolated_home / ".gitconfig"

    def switch(on: bool) -> None:
        config.write_text(f"[uploadpack]\n\tpackObjectsHook = {hook}\n" if on else "")

    return switch


def files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


def add_random_file(origin: Path, size: int = 3 * 1024 * 1024) -> str:
    """A file that does not compress, so its pack is as large as the file."""
    (origin / "data.bin").write_bytes(os.urandom(size))
    return commit(origin)


@pytest.mark.security
def test_a_clone_stopped_midway_leaves_nothing_on_disk(origin, tmp_path, stall):
    add_random_file(origin)
    mirror = mirror_of(origin, tmp_path, GitPolicy(allowed_roots=(tmp_path,), timeout_s=3))
    stall(True)

    with pytest.raises(GitFailed, match="took longer than 3 s"):
        mirror.update()

    assert files_under(tmp_path / "var" / "sources") == []
    stall(False)
    assert mirror.update() == git(origin, "rev-parse", "HEAD")  # the next sync starts afresh


@pytest.mark.security
def test_a_fetch_stopped_midway_leaves_no_partial_pack_and_the_mirror_still_works(origin, tmp_path, stall):
    first = commit(origin)
    mirror = mirror_of(origin, tmp_path, GitPolicy(allowed_roots=(tmp_path,), timeout_s=3))
    mirror.update()
    before = files_under(mirror.path / "objects")
    second = add_random_file(origin)
    stall(True)

    with pytest.raises(GitFailed, match="took longer than 3 s"):
        mirror.update()

    assert files_under(mirror.path / "objects") == before  # no partial pack, no loose object
    assert mirror.files(first, DOCS)[0]  # the mirror as it was
    stall(False)
    assert mirror.update() == second


@pytest.mark.security
def test_a_mirror_that_outgrows_its_disk_allowance_is_stopped_and_a_first_clone_removed(
    origin, tmp_path, stall
):
    add_random_file(origin, 1024 * 1024)
    small = mirror_of(origin, tmp_path, GitPolicy(allowed_roots=(tmp_path,), max_disk_bytes=100_000))
    stall(True)  # stalled after 256 KB: only watching the disk while git runs stops it (timeout: 300 s)
    with pytest.raises(GitTooLarge, match="more than the 100000 bytes allowed"):
        small.update()
    assert files_under(tmp_path / "var" / "sources") == []

    stall(False)  # a whole transfer, likely over before the disk is looked at while it runs
    with pytest.raises(GitTooLarge, match="more than the 100000 bytes allowed"):
        small.update()
    assert files_under(tmp_path / "var" / "sources") == []

    roomy = mirror_of(origin, tmp_path, GitPolicy(allowed_roots=(tmp_path,), max_disk_bytes=4 * 1024 * 1024))
    roomy.update()
    assert 1024 * 1024 < roomy.disk_bytes() < 4 * 1024 * 1024


@pytest.mark.security
def test_credentials_in_the_url_are_refused_and_stay_out_of_the_reason(tmp_path):
    mirror = GitMirror(tmp_path / "repo.git", "https://user:s3cret@127.0.0.1:1/r.git", "main", GitPolicy())
    with pytest.raises(GitRefused) as refused:
        mirror.update()
    assert "user name or password" in refused.value.reason and "s3cret" not in refused.value.reason


def test_an_unreachable_repository_fails_with_gits_reason(tmp_path):
    # Nothing listens on port 1 of the loopback: git fails at once, without the internet.
    policy = GitPolicy(allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),))
    with pytest.raises(GitFailed) as failed:
        GitMirror(tmp_path / "repo.git", "https://127.0.0.1:1/r.git", "main", policy).update()
    assert "git clone failed" in failed.value.reason


# --- glob_match -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("docs/a.md", "docs/**/*.md", True),
        ("docs/x/y/z.md", "docs/**/*.md", True),
        ("docs/a.txt", "docs/**/*.md", False),
        ("other/docs/a.md", "docs/**/*.md", False),
        ("docs/a.md", "docs/*.md", True),
        ("docs/x/a.md", "docs/*.md", False),  # "*" stays within one directory
        ("README.md", "*.md", True),  # no "/": the file name at any depth, as in .gitignore
        ("docs/x/a.md", "*.md", True),
        ("docs/x/a.txt", "*.md", False),
        ("docs/x/a.md", "**/*.md", True),
        ("a.md", "**/*.md", True),
        ("docs/a.md", "/docs/*.md", True),  # a leading "/" anchors, which a "/" already does
        ("docs/x/a.py", "docs/**", True),
        ("docs", "docs/**", False),  # "docs/**" is what is inside docs/
        ("docs/x/a.py", "docs/", True),
        ("docs/a.MD", "docs/*.md", False),  # case-sensitive, like Git paths
        ("docs/a1.md", "docs/a?.md", True),
        ("docs/ab.md", "docs/a[0-9].md", False),
        ("a/b/c/d/e", "**/**/**/e", True),
        ("a/x/b/y/c", "a/**/b/**/c", True),
        ("a/x/c", "a/**/b/**/c", False),
        ("docs/a.md", "", False),
    ],
)
def test_glob_match(path, pattern, expected):
    assert glob_match(path, pattern) is expected


# --- file_url ---------------------------------------------------------------------------------------

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/o/r.git", f"https://github.com/o/r/blob/{SHA}/docs/a%20b.md"),
        ("https://github.com/o/r", f"https://github.com/o/r/blob/{SHA}/docs/a%20b.md"),
        ("https://user:token@github.com/o/r.git", f"https://github.com/o/r/blob/{SHA}/docs/a%20b.md"),
        ("https://gitlab.com/g/sub/r.git", f"https://gitlab.com/g/sub/r/-/blob/{SHA}/docs/a%20b.md"),
        ("https://gitlab.example.org/g/r", f"https://gitlab.example.org/g/r/-/blob/{SHA}/docs/a%20b.md"),
        ("https://example.com/o/r.git", None),
        ("git@github.com:o/r.git", None),
        ("/srv/repos/r", None),
    ],
)
def test_file_url(url, expected):
    assert file_url(url, SHA, "docs/a b.md") == expected
