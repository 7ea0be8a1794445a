"""Reads a Git repository that a collection follows as a source: a bare mirror, its files and changes.

Threat model: the repository, and whoever can push to it, is hostile. It may carry
- hooks (in its own ``.git/hooks`` or via config): never run. The mirror is bare (nothing is checked
  out), gets no hook templates (``--template=``), and every git call runs with
  ``core.hooksPath=/dev/null``; the source's own hooks and config never reach this side of the wire.
- submodules: never fetched (``--no-recurse-submodules``); a submodule entry is reported as skipped.
- transports that run commands (``ext::``, ``fd::``), option injection (``--upload-pack=...``, an
  ssh host like ``-oProxyCommand=...``) and local paths that read the server's disk: refused by
  ``check_git_url`` before git sees the URL, and by ``GIT_ALLOW_PROTOCOL`` / ``protocol.*.allow`` in
  case git would interpret it otherwise. A local repository is allowed only when it resolves inside
  a root the operator allows (``GitPolicy.allowed_roots``).
- huge files or too many files: files above ``max_file_bytes`` are skipped, more than ``max_files``
  matching files refuse the whole listing, and every git call has a timeout (the whole process group
  is killed, so ssh or a remote helper do not linger).
- symlinks: a symlink is a blob whose content is a path string. Nothing is checked out, so nothing is
  ever followed on disk; listings skip symlinks rather than ingest their target strings.
- a huge history: the mirror's disk is watched while git runs and a clone or fetch that grows it
  past ``max_disk_bytes`` is stopped. A clone is made beside the mirror and moved into place only
  once complete, so a clone stopped or failed (or killed with its worker) leaves nothing behind; a
  fetch receives one pack, whose partial file is removed when it stops.
Residual risks the caller owns: running two updates of one mirror at once, and credentials in an
https URL (git keeps the URL in the mirror's config).

Pure: no Django import, so it can be tested and reused without a database.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

LOCAL_REFUSED = (
    "local repositories are refused unless under a root the operator allows (KNOWLEDGE_SOURCES_FOLDER_ROOTS)"
)
# A remote helper ("ext::sh -c ..."): git runs the helper named before "::", so none is accepted.
_REMOTE_HELPER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.-]*::")
# scp-like ssh ("git@host:owner/repo.git"); the host must not start with "-" (ssh would read an option).
_SCP_LIKE = re.compile(r"^(?P<user>[A-Za-z0-9._-]+)@(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*):(?P<path>.+)$")
_HOSTNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")
_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{4,64}$")
_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")
# Variables from the caller's environment that would point git at another repository, config or
# object store; only the ssh/TLS settings an operator sets on purpose are kept.
_KEPT_GIT_VARIABLES = frozenset({"GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_SSL_CAINFO"})
_SYMLINK_MODE = "120000"


class GitRefused(Exception):
    """The URL, branch or request is not allowed by the policy; ``reason`` says why, for people."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class GitTooLarge(GitRefused):
    """The mirror would take more disk than the policy allows."""

    def __init__(self, size: int, limit: int):
        super().__init__(
            f"the repository's copy on this server would take more than the {limit} bytes allowed "
            f"({size} bytes when it was stopped)"
        )
        self.size, self.limit = size, limit


class GitFailed(Exception):
    """git ran and failed (or timed out); ``reason`` ends with git's own last line of error."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class GitPolicy:
    allowed_roots: tuple[Path, ...] = ()
    # Networks a repository's host may resolve into although internal (web.address_refusal);
    # check_hosts False only for a caller that checks addresses itself.
    allowed_networks: tuple = ()
    check_hosts: bool = True
    timeout_s: float = 300
    max_file_bytes: int = 50 * 1024 * 1024
    max_files: int = 5000
    # The most the mirror may take on disk, None for no limit.
    max_disk_bytes: int | None = None


@dataclass(frozen=True)
class GitFile:
    path: str
    blob_sha: str
    size: int


@dataclass(frozen=True)
class Changes:
    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


# --- URLs -------------------------------------------------------------------------------------------


def check_git_url(url: str, policy: GitPolicy) -> None:
    """Raise GitRefused unless ``url`` is https, ssh (needs keys configured for the server's user), or a
    local repository inside one of the policy's allowed roots."""
    _git_target(url, policy)


def _git_target(url: str, policy: GitPolicy) -> tuple[str, bool]:
    """What to hand git for ``url`` and whether it is local (local: the resolved path, so a symlink
    swapped after the check cannot redirect git elsewhere)."""
    if not url or url != url.strip() or any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise GitRefused("the URL is empty or contains spaces or control characters")
    if url.startswith("-"):
        raise GitRefused("a URL may not start with '-' (git would read it as an option)")
    if _REMOTE_HELPER.match(url):
        raise GitRefused("remote helpers ('transport::address', such as ext:: or fd::) are refused")
    if "://" in url:
        return _checked_url_with_scheme(url, policy)
    if match := _SCP_LIKE.match(url):
        if match["path"].startswith("-"):
            raise GitRefused("the repository path may not start with '-'")
        host_address(match["host"], 22, policy)
        return url, False
    return str(_allowed_local_path(Path(url), policy)), True


def _checked_url_with_scheme(url: str, policy: GitPolicy) -> tuple[str, bool]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise GitRefused("file:// URLs must name a path on this machine")
        return str(_allowed_local_path(Path(unquote(parts.path)), policy)), True
    if scheme not in ("https", "ssh"):
        raise GitRefused(f"the {scheme or 'unknown'} transport is refused; use https:// or ssh://")
    if not parts.hostname or not _HOSTNAME.match(parts.hostname):
        raise GitRefused("the URL has no valid host name")
    if (parts.username or "").startswith("-"):
        raise GitRefused("the URL's user name may not start with '-'")
    if parts.password is not None or (scheme == "https" and parts.username):
        # It would be stored with the source and shown to every reader of the collection.
        raise GitRefused(
            "a repository URL may not hold a user name or password; give the server its own credentials"
        )
    host_address(parts.hostname, parts.port or (443 if scheme == "https" else 22), policy)
    return url, False


def host_address(host: str, port: int, policy: GitPolicy) -> str:
    """The address ``host`` resolves to, if every address it resolves to is a public internet address
    (or in the policy's allowed networks): a repository URL must not reach the server's own network."""
    from knowledge.source_fetch.web import FetchFailed, FetchRefused, host_checked

    if not policy.check_hosts:
        return ""
    try:
        return host_checked(host, port, policy.allowed_networks)
    except (FetchRefused, FetchFailed) as exc:
        raise GitRefused(exc.reason) from exc


def _allowed_local_path(path: Path, policy: GitPolicy) -> Path:
    if not path.is_absolute():
        raise GitRefused(
            "not a repository URL (https://, ssh:// or user@host:path) nor an absolute local path"
        )
    resolved = path.resolve()
    if not any(resolved.is_relative_to(root.resolve()) for root in policy.allowed_roots):
        raise GitRefused(LOCAL_REFUSED)
    return resolved


def file_url(url: str, commit: str, path: str) -> str | None:
    """A link to ``path`` at ``commit`` on GitHub- or GitLab-like https hosts, else None. Credentials in
    the URL are dropped: the link is shown to readers."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme.lower() != "https" or not _OBJECT_ID.match(commit):
        return None
    project = parts.path.strip("/").removesuffix(".git").strip("/")
    base = f"https://{host}{f':{parts.port}' if parts.port else ''}/{project}"
    quoted = quote(path.lstrip("/"), safe="/")
    if _is_host_family(host, "github") and project.count("/") == 1:
        return f"{base}/blob/{commit}/{quoted}"
    if _is_host_family(host, "gitlab") and project.count("/") >= 1:  # GitLab nests groups
        return f"{base}/-/blob/{commit}/{quoted}"
    return None


def _is_host_family(host: str, name: str) -> bool:
    return host == f"{name}.com" or host.startswith(f"{name}.")


# --- Globs ------------------------------------------------------------------------------------------


def glob_match(path: str, pattern: str) -> bool:
    """Whether the repository path ``path`` matches ``pattern``.

    - ``*``, ``?`` and ``[...]`` match within one path segment (never across ``/``), case-sensitively.
    - ``**`` as a whole segment matches zero or more directories (``docs/**/*.md`` matches
      ``docs/a.md`` and ``docs/x/y.md``); a trailing ``/**`` or ``/`` matches everything below.
    - A pattern with a ``/`` is anchored at the repository root (a leading ``/`` is ignored); one
      without a ``/`` matches the file name at any depth, as in .gitignore (``*.md`` matches
      ``README.md`` and ``docs/a.md``).
    """
    if not pattern or not path:
        return False
    if pattern.endswith("/"):
        pattern += "**"
    if "/" not in pattern:
        pattern = "**/" + pattern
    return _segments_match(path.split("/"), pattern.lstrip("/").split("/"))


def _segments_match(path: list[str], pattern: list[str]) -> bool:
    # The path positions reachable after each pattern segment: linear in their product, so patterns
    # full of "**" cannot blow up the way naive backtracking does.
    reachable = {0}
    for index, segment in enumerate(pattern):
        if not reachable:
            return False
        if segment == "**":
            trailing = index == len(pattern) - 1  # "docs/**" means something inside docs/
            reachable = set(range(min(reachable) + trailing, len(path) + 1))
        else:
            reachable = {i + 1 for i in reachable if i < len(path) and fnmatchcase(path[i], segment)}
    return len(path) in reachable


def _matches_any(path: str, globs: list[str]) -> bool:
    return any(glob_match(path, pattern) for pattern in globs)


# --- The mirror -------------------------------------------------------------------------------------


class GitMirror:
    """A bare mirror of one branch of ``url``, kept in ``path`` (a directory the caller owns)."""

    def __init__(self, path: Path, url: str, branch: str, policy: GitPolicy):
        self.path = Path(path)
        self.url = url
        self.branch = branch
        self.policy = policy

    def update(self) -> str:
        """Clone (first time) or fetch the branch; return its commit SHA."""
        target, local = _git_target(self.url, self.policy)
        self._check_branch()
        remote = _remote_options(local) + self._pinned_https()
        ref = f"refs/heads/{self.branch}"
        if (self.path / "HEAD").is_file():
            self._fetch(remote, target, ref)
        else:
            self._clone(remote, target, local)
        return self._branch_commit(ref)

    def disk_bytes(self) -> int:
        return directory_bytes(self.path)

    def _fetch(self, remote: list[str], target: str, ref: str) -> None:
        _remove_partial_packs(self.path)  # a fetch killed with its worker left them
        self._check_disk(self.path)  # over already: nothing more is fetched
        # The URL is given each time rather than read from the mirror's config, so a changed URL is
        # followed; "+" accepts force-pushed history. unpackLimit=1: the objects arrive as one pack,
        # a single temporary file until complete, never as loose objects written one by one.
        fetch = ["-c", "fetch.unpackLimit=1", "fetch", "--no-tags", "--no-recurse-submodules"]
        try:
            self._git(*remote, *fetch, "--", target, f"+{ref}:{ref}", verb="fetch", watch=self.path)
        except BaseException:
            _remove_partial_packs(self.path)
            raise
        self._check_disk(self.path)  # a transfer too quick to be watched

    def _clone(self, remote: list[str], target: str, local: bool) -> None:
        """A clone made beside the mirror, moved into place only once complete and within its disk
        allowance: one stopped (timeout, disk, a killed worker) leaves nothing the next sync trips on."""
        partial = self.path.with_name(self.path.name + ".partial")
        for leftover in (partial, self.path):  # a mirror without HEAD is a killed clone's remains
            shutil.rmtree(leftover, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        clone = ["clone", "--quiet", "--bare", "--template=", "--single-branch", "--no-recurse-submodules"]
        # --no-local: a local source goes through upload-pack like a remote one, instead of
        # hard-linking or copying its object directory (which may hold symlinks out of the root).
        clone += ["--no-local"] if local else []
        clone += ["--branch", self.branch, "--", target, str(partial)]
        try:
            self._run_git(*remote, *clone, verb="clone", watch=partial)
            self._check_disk(partial)
            partial.rename(self.path)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise

    def _check_disk(self, path: Path) -> None:
        limit = self.policy.max_disk_bytes
        if limit is not None and (size := directory_bytes(path)) > limit:
            raise GitTooLarge(size, limit)

    def files(self, commit: str, globs: list[str]) -> tuple[list[GitFile], list[tuple[str, str]]]:
        """The blobs at ``commit`` whose paths match any of ``globs``, and the matching paths skipped,
        each with its reason (too large, a symlink, a submodule)."""
        listing = self._git("ls-tree", "-r", "-l", "-z", "--full-tree", _object_id(commit), verb="ls-tree")
        files: list[GitFile] = []
        skipped: list[tuple[str, str]] = []
        for mode, kind, sha, size, path in _tree_entries(listing):
            if not _matches_any(path, globs):
                continue
            if reason := self._skip_reason(mode, kind, size):
                skipped.append((path, reason))
            else:
                files.append(GitFile(path=path, blob_sha=sha, size=int(size)))
        if len(files) > self.policy.max_files:
            limit = self.policy.max_files
            raise GitRefused(f"{len(files)} files match, more than the {limit} allowed; narrow the patterns")
        return files, skipped

    def changes(self, old_commit: str, new_commit: str, globs: list[str]) -> Changes:
        """The matching paths added, modified and deleted between two commits; a rename counts as a
        deletion and an addition."""
        # diff-tree, the plumbing behind "git diff", ignores diff settings from config.
        args = ["diff-tree", "-r", "-z", "--name-status", "--no-renames", "--no-ext-diff"]
        output = self._git(*args, _object_id(old_commit), _object_id(new_commit), "--", verb="diff")
        changes = Changes()
        by_status = {"A": changes.added, "D": changes.deleted, "M": changes.modified, "T": changes.modified}
        fields = output.split("\0")
        for status, path in zip(fields[0::2], fields[1::2], strict=False):
            if status[:1] in by_status and _matches_any(path, globs):
                by_status[status[:1]].append(path)
        return changes

    def read(self, blob_sha: str) -> bytes:
        """The content of one blob (a symlink's blob is its target path, never followed)."""
        blob = _object_id(blob_sha)
        # Checked first because any SHA may be asked for, not only those files() listed.
        size = int(self._git("cat-file", "-s", blob, verb="cat-file"))
        if size > self.policy.max_file_bytes:
            raise GitRefused(f"the file has {size} bytes, more than the {self.policy.max_file_bytes} allowed")
        return self._run_git(f"--git-dir={self.path}", "cat-file", "blob", blob, verb="cat-file")

    def _branch_commit(self, ref: str) -> str:
        try:
            return self._git(
                "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", verb="rev-parse"
            ).strip()
        except GitFailed:
            # clone --branch also accepts a tag, which leaves no branch behind.
            raise GitFailed(f"branch {self.branch} not found in the mirror (is it a tag?)") from None

    def _skip_reason(self, mode: str, kind: str, size: str) -> str | None:
        if kind == "commit":
            return "a submodule (submodules are not fetched)"
        if kind != "blob":
            return f"not a file ({kind})"
        if mode == _SYMLINK_MODE:
            return "a symbolic link (links are not followed)"
        if int(size) > self.policy.max_file_bytes:
            return f"{size} bytes, more than the {self.policy.max_file_bytes} allowed"
        return None

    def _check_branch(self) -> None:
        if not self.branch or self.branch.startswith("-"):
            raise GitRefused("the branch name is empty or starts with '-'")
        probe = subprocess.run(
            ["git", "check-ref-format", f"refs/heads/{self.branch}"], capture_output=True, env=_git_env()
        )
        if probe.returncode:
            raise GitRefused(f"{self.branch!r} is not a valid branch name")

    def _pinned_https(self) -> list[str]:
        """https: no redirects, and the connection to the address that was checked (a second DNS
        answer, rebinding the name to an internal address, is never asked for)."""
        parts = urlsplit(self.url)
        if parts.scheme.lower() != "https" or not self.policy.check_hosts:
            return []
        port = parts.port or 443
        address = host_address(parts.hostname, port, self.policy)
        shown = f"[{address}]" if ":" in address else address
        return [
            "-c",
            "http.followRedirects=false",
            "-c",
            f"http.curloptResolve={parts.hostname}:{port}:{shown}",
        ]

    def _git(self, *args: str, verb: str, watch: Path | None = None) -> str:
        """Run a git command on the mirror; its output as text (paths not in UTF-8 get U+FFFD)."""
        output = self._run_git(f"--git-dir={self.path}", *args, verb=verb, watch=watch)
        return output.decode("utf-8", errors="replace")

    def _run_git(self, *args: str, verb: str, watch: Path | None = None) -> bytes:
        """``watch``: the directory git writes into, stopped once larger than max_disk_bytes."""
        hardened = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
        limit = self.policy.max_disk_bytes
        disk = (watch, limit) if watch is not None and limit is not None else None
        return _run(["git", *hardened, *args], timeout=self.policy.timeout_s, verb=verb, disk=disk)


def _remote_options(local: bool) -> list[str]:
    # The file protocol only for a URL that passed the allowed-roots check; GIT_ALLOW_PROTOCOL
    # (_git_env) repeats this, overriding any config that would say otherwise.
    file_allowed = "always" if local else "never"
    return ["-c", f"protocol.file.allow={file_allowed}", "-c", "protocol.ext.allow=never"]


def _tree_entries(listing: str):
    """(mode, type, sha, size, path) per entry of ``ls-tree -r -l -z``; size is "-" for submodules."""
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, sha, size = meta.split()
        yield mode, kind, sha, size, path


def _object_id(value: str) -> str:
    # Only hex reaches git as a revision, so a stored value can never become an option or a ref name.
    if not _OBJECT_ID.match(value or ""):
        raise GitRefused(f"{value!r} is not a commit or blob id")
    return value


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEPT_GIT_VARIABLES}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",  # the system config is not ours to trust for a hostile remote
        GIT_TERMINAL_PROMPT="0",  # never wait for a password nobody will type
        GIT_ALLOW_PROTOCOL="https:ssh:file",  # file is further limited per call (protocol.file.allow)
    )
    return env


def _run(command: list[str], *, timeout: float, verb: str, disk: tuple[Path, int] | None = None) -> bytes:
    """Run git without a shell; kill its whole process group (ssh, remote helpers) when it is stopped
    (timeout, disk, any error here). The new session also has no terminal, so ssh fails instead of
    asking for a password or a host key."""
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_git_env(),
            start_new_session=True,
        )
    except FileNotFoundError:
        raise GitFailed("git is not installed on the server") from None
    try:
        output, errors = _wait(process, timeout=timeout, verb=verb, disk=disk)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):  # the group may have ended already
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    if process.returncode:
        raise GitFailed(f"git {verb} failed: {_last_line(errors)}")
    return output


# How often the disk of a clone or fetch is looked at while git runs.
_DISK_WATCH_S = 0.5


def _wait(process: subprocess.Popen, *, timeout: float, verb: str, disk: tuple[Path, int] | None):
    """The process's output and errors once it ends; GitFailed past ``timeout``, GitTooLarge once
    the directory ``disk`` names holds more than its bytes."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            return process.communicate(timeout=min(left, _DISK_WATCH_S) if disk else left)
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise GitFailed(f"git {verb} took longer than {timeout:g} s and was stopped") from None
            if disk and (size := directory_bytes(disk[0])) > disk[1]:
                raise GitTooLarge(size, disk[1]) from None


def directory_bytes(path: Path) -> int:
    """The bytes of the files under ``path`` (links not followed); 0 when there is none."""
    total = 0
    for folder, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:  # removed meanwhile (git renames its temporary files)
                continue
    return total


def _remove_partial_packs(mirror: Path) -> None:
    """The temporary files of a transfer that did not complete (index-pack's tmp_pack_*, tmp_idx_*)."""
    for partial in (mirror / "objects" / "pack").glob("tmp_*"):
        partial.unlink(missing_ok=True)


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", errors="replace").splitlines() if line.strip()]
    # git may echo the URL; its credentials must not reach logs or the page.
    return _CREDENTIALS.sub("***@", lines[-1]) if lines else "no error message"
