"""OpenAPI / Swagger extraction on real specs from ../shared/corpus/openapi."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from knowledge.ingestion.formats.openapi import extract_openapi
from knowledge.ingestion.types import ExtractionError, Section

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "openapi"
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def _read(name: str) -> bytes:
    path = CORPUS / name
    if not path.exists():
        pytest.fail(f"corpus file missing: {path}")
    return path.read_bytes()


def _by_ref(sections: list[Section]) -> dict[str, Section]:
    refs = [s.source_ref for s in sections]
    assert len(refs) == len(set(refs)), "duplicate source_refs"
    return {s.source_ref: s for s in sections}


def _assert_graph_consistent(sections: list[Section]) -> None:
    """ref_ids point at existing sections, and referenced_by is their exact inverse."""
    ids = {s.element_id for s in sections}
    assert len(ids) == len(sections), "duplicate element_ids"
    inverse: dict[str, set[str]] = {}
    for s in sections:
        assert list(s.ref_ids) == sorted(set(s.ref_ids)), s.element_id
        for rid in s.ref_ids:
            assert rid in ids, f"{s.element_id} references unknown {rid}"
            inverse.setdefault(rid, set()).add(s.element_id)
    for s in sections:
        assert list(s.referenced_by) == sorted(inverse.get(s.element_id, set())), s.element_id


# --------------------------------------------------------------------------- petstore 3.0


@pytest.fixture(scope="module")
def petstore() -> list[Section]:
    return extract_openapi("petstore-expanded-3.0.json", _read("petstore-expanded-3.0.json"))


def test_petstore_has_one_section_per_operation_and_component(petstore):
    refs = [s.source_ref for s in petstore]
    assert refs == [
        "operation=GET /pets",
        "operation=POST /pets",
        "operation=GET /pets/{id}",
        "operation=DELETE /pets/{id}",
        "component=schemas/Pet",
        "component=schemas/NewPet",
        "component=schemas/Error",
    ]
    post = _by_ref(petstore)["operation=POST /pets"]
    assert post.element_id == "petstore-expanded-3.0.json:paths/pets/post"
    assert post.heading_path == ("Operations", "POST /pets")
    assert post.metadata == {
        "type": "operation",
        "method": "POST",
        "path": "/pets",
        "operation_id": "addPet",
        "tags": [],
    }
    pet = _by_ref(petstore)["component=schemas/Pet"]
    assert pet.element_id == "petstore-expanded-3.0.json:components/schemas/Pet"
    assert pet.metadata == {"type": "component", "component_type": "schemas", "name": "Pet"}


def test_petstore_operation_text_is_readable_prose(petstore):
    by = _by_ref(petstore)
    post = by["operation=POST /pets"].text
    assert post.splitlines()[0] == "POST /pets"
    assert "Operation ID: addPet" in post
    assert "Request body (required):" in post
    assert "Pet to add to the store" in post
    assert "Schema (application/json): NewPet" in post
    # the referenced schema's top-level fields are outlined, not dumped
    assert "- name (string, required)" in post
    assert "- tag (string)" in post
    assert "- 200: pet response; body: Pet" in post
    assert "- default: unexpected error; body: Error" in post
    assert "$ref" not in post and '"type"' not in post and "{" not in post
    # parts are separated by blank lines for the paragraph chunker
    assert "\n\nResponses:\n" in post

    get = by["operation=GET /pets"].text
    assert "- tags (query, array of string): tags to filter by" in get
    assert "- limit (query, integer, int32): maximum number of results to return" in get
    assert "- 200: pet response; body: array of Pet" in get
    one = by["operation=GET /pets/{id}"].text
    assert "- id (path, integer, int64, required): ID of pet to fetch" in one


def test_petstore_refs_both_ways(petstore):
    by = _by_ref(petstore)
    f = "petstore-expanded-3.0.json"
    assert by["operation=POST /pets"].ref_ids == (
        f"{f}:components/schemas/Error",
        f"{f}:components/schemas/NewPet",
        f"{f}:components/schemas/Pet",
    )
    assert by["operation=DELETE /pets/{id}"].ref_ids == (f"{f}:components/schemas/Error",)
    # Pet -> NewPet through allOf
    assert by["component=schemas/Pet"].ref_ids == (f"{f}:components/schemas/NewPet",)
    assert by["component=schemas/NewPet"].referenced_by == (
        f"{f}:components/schemas/Pet",
        f"{f}:paths/pets/post",
    )
    assert by["component=schemas/Error"].referenced_by == (
        f"{f}:paths/pets/get",
        f"{f}:paths/pets/post",
        f"{f}:paths/pets/{{id}}/delete",
        f"{f}:paths/pets/{{id}}/get",
    )
    assert by["component=schemas/Error"].ref_ids == ()
    assert all(s.referenced_by == () for s in petstore if s.metadata["type"] == "operation")
    _assert_graph_consistent(petstore)


def test_petstore_component_text(petstore):
    by = _by_ref(petstore)
    error = by["component=schemas/Error"].text
    assert error.startswith("Schema Error\n\n")
    assert "Required: code, message" in error
    assert "- code (integer, int32, required)" in error
    assert "- message (string, required)" in error
    pet = by["component=schemas/Pet"].text
    assert "All of: NewPet, object" in pet
    assert "- id (integer, int64, required)" in pet


def test_petstore_description_kept_with_whitespace_collapsed():
    spec = json.loads(_read("petstore-expanded-3.0.json"))
    spec["paths"]["/pets"]["post"]["description"] = "Creates   a\tpet.\n\nSecond    paragraph."
    sections = extract_openapi("p.json", json.dumps(spec).encode())
    post = _by_ref(sections)["operation=POST /pets"].text
    assert "\n\nCreates a pet.\n\nSecond paragraph.\n\n" in post


def test_yaml_version_of_petstore_gives_the_same_sections(petstore):
    spec = json.loads(_read("petstore-expanded-3.0.json"))
    data = yaml.safe_dump(spec, sort_keys=False).encode()
    assert not data.lstrip().startswith(b"{")
    sections = extract_openapi("petstore-expanded-3.0.yaml", data)
    assert [s.source_ref for s in sections] == [s.source_ref for s in petstore]
    for from_yaml, from_json in zip(sections, petstore, strict=True):
        assert from_yaml.text == from_json.text
        assert from_yaml.element_id == from_json.element_id.replace(".json:", ".yaml:")
        assert from_yaml.ref_ids == tuple(r.replace(".json:", ".yaml:") for r in from_json.ref_ids)
        assert from_yaml.referenced_by == tuple(
            r.replace(".json:", ".yaml:") for r in from_json.referenced_by
        )


# --------------------------------------------------------------------------- petstore 3.1


def test_petstore_simple_31_path_parameters_tags_and_security():
    sections = extract_openapi("petstore-simple-3.1.json", _read("petstore-simple-3.1.json"))
    by = _by_ref(sections)
    assert set(by) == {
        "operation=PUT /pet/{id}",
        "operation=GET /pet/{id}",
        "component=securitySchemes/apiKey",
    }
    put = by["operation=PUT /pet/{id}"]
    assert put.heading_path == ("pet", "PUT /pet/{id}")
    assert put.metadata["tags"] == ["pet"]
    assert put.metadata["operation_id"] is None
    assert put.text.splitlines()[0] == "PUT /pet/{id} — Update a pet"
    # the path-level parameter is merged into both operations
    assert "- id (path, integer, required)" in put.text
    assert "- id (path, integer, required)" in by["operation=GET /pet/{id}"].text
    assert "Security: apiKey" in put.text
    assert "Security: none" in by["operation=GET /pet/{id}"].text
    scheme = by["component=securitySchemes/apiKey"]
    assert scheme.element_id == "petstore-simple-3.1.json:components/securitySchemes/apiKey"
    assert "Type: http" in scheme.text and "Scheme: basic" in scheme.text
    _assert_graph_consistent(sections)


# --------------------------------------------------------------------------- circular


def test_circular_self_reference_terminates_and_links_both_ways():
    sections = extract_openapi("circular-3.0.json", _read("circular-3.0.json"))
    by = _by_ref(sections)
    err = by["component=schemas/ErrorMessage"]
    eid = "circular-3.0.json:components/schemas/ErrorMessage"
    assert err.element_id == eid
    assert err.ref_ids == (eid,)
    assert err.referenced_by == (eid, "circular-3.0.json:paths/anything/get")
    assert "- inner (ErrorMessage)" in err.text
    assert "- canBeRetried (string, one of Unknown | Yes | No)" in err.text
    assert by["operation=GET /anything"].ref_ids == (eid,)
    assert "- 404: Not found; body: ErrorMessage" in by["operation=GET /anything"].text
    _assert_graph_consistent(sections)


def test_circular_request_bodies_cycles_in_ref_ids_both_ways():
    sections = extract_openapi("circular-request-bodies-3.0.json", _read("circular-request-bodies-3.0.json"))
    by = _by_ref(sections)

    def cid(name: str) -> str:
        return f"circular-request-bodies-3.0.json:components/schemas/{name}"

    # two-hop cycle Person -> Company -> Person
    assert by["component=schemas/Person"].ref_ids == (cid("Company"),)
    assert by["component=schemas/Company"].ref_ids == (cid("Person"),)
    assert cid("Company") in by["component=schemas/Person"].referenced_by
    assert cid("Person") in by["component=schemas/Company"].referenced_by
    # self references, directly, through array items and through oneOf
    for name in ("TreeNode", "LinkedNode", "Expression"):
        section = by[f"component=schemas/{name}"]
        assert section.ref_ids == (cid(name),)
        assert cid(name) in section.referenced_by
    direct = by["operation=POST /direct"]
    assert direct.ref_ids == (cid("TreeNode"),)
    assert "- parent (TreeNode, required)" in direct.text
    assert "- children (array of TreeNode)" in direct.text
    assert "- value (one of: string | Expression)" in by["operation=POST /polymorphic"].text
    _assert_graph_consistent(sections)


def test_yaml_recursive_alias_terminates():
    data = textwrap.dedent(
        """\
        openapi: 3.0.0
        info: {title: t, version: '1'}
        paths: {}
        components:
          schemas:
            Node: &node
              type: object
              example: *node
              properties:
                again: *node
                next: {$ref: '#/components/schemas/Node'}
        """
    ).encode()
    sections = extract_openapi("loop.yaml", data)
    (node,) = sections
    assert node.ref_ids == ("loop.yaml:components/schemas/Node",)
    assert node.referenced_by == ("loop.yaml:components/schemas/Node",)
    assert "- next (Node)" in node.text
    assert len(node.text) < 20_000


# --------------------------------------------------------------------------- GitHub (13 MB)


@pytest.fixture(scope="module")
def github():
    data = _read("api.github.com.json")
    start = time.perf_counter()
    sections = extract_openapi("api.github.com.json", data)
    elapsed = time.perf_counter() - start
    return json.loads(data), sections, elapsed


def test_github_extraction_is_fast_and_sections_are_bounded(github):
    _, sections, elapsed = github
    assert elapsed < 15, f"extraction took {elapsed:.1f}s"
    largest = max(len(s.text) for s in sections)
    assert largest < 100_000, f"largest section has {largest} characters"


def test_github_one_section_per_operation_and_component(github):
    spec, sections, _ = github
    operations = sum(1 for item in spec["paths"].values() for method in item if method in METHODS)
    assert 1_100 < operations < 1_400
    ops = [s for s in sections if s.metadata["type"] == "operation"]
    assert len(ops) == operations
    components = sum(len(v) for v in spec["components"].values())
    assert len(sections) - len(ops) == components
    _by_ref(sections)  # source_refs unique


def test_github_create_issue_operation(github):
    spec, sections, _ = github
    by = _by_ref(sections)
    section = by["operation=POST /repos/{owner}/{repo}/issues"]
    f = "api.github.com.json"
    assert section.element_id == f"{f}:paths/repos/{{owner}}/{{repo}}/issues/post"
    assert section.heading_path == ("issues", "POST /repos/{owner}/{repo}/issues")
    assert section.metadata["operation_id"] == "issues/create"
    assert section.metadata["tags"] == ["issues"]
    # exactly the direct $refs of this operation in the spec, nothing transitive
    assert section.ref_ids == (
        f"{f}:components/examples/issue",
        f"{f}:components/parameters/owner",
        f"{f}:components/parameters/repo",
        f"{f}:components/responses/bad_request",
        f"{f}:components/responses/forbidden",
        f"{f}:components/responses/gone",
        f"{f}:components/responses/not_found",
        f"{f}:components/responses/service_unavailable",
        f"{f}:components/responses/validation_failed",
        f"{f}:components/schemas/issue",
    )
    # validation-error is reached only through responses/validation_failed
    assert f"{f}:components/schemas/validation-error" not in section.ref_ids
    validation_failed = by["component=responses/validation_failed"]
    assert validation_failed.ref_ids == (f"{f}:components/schemas/validation-error",)
    assert section.element_id in validation_failed.referenced_by
    assert section.element_id in by["component=schemas/issue"].referenced_by

    text = section.text
    assert text.splitlines()[0] == "POST /repos/{owner}/{repo}/issues — Create an issue"
    assert "- owner (path, string, required): The account owner of the repository." in text
    assert "- title (one of: string | integer, required): The title of the issue." in text
    assert "- 201: Response; body: issue" in text
    assert "- 422: Validation failed, or the endpoint has been spammed.; body: validation-error" in (text)
    assert "$ref" not in text


def test_github_issue_schema_component(github):
    _, sections, _ = github
    by = _by_ref(sections)
    issue = by["component=schemas/issue"]
    f = "api.github.com.json"
    assert issue.element_id == f"{f}:components/schemas/issue"
    assert f"{f}:components/schemas/nullable-simple-user" in issue.ref_ids
    assert f"{f}:components/schemas/simple-user" in issue.ref_ids  # via array items
    assert "- assignees (array of simple-user)" in issue.text
    assert "- user (nullable-simple-user, required)" in issue.text
    assert "State of the issue; either 'open' or 'closed'" in issue.text


def test_github_graph_is_consistent(github):
    _, sections, _ = github
    _assert_graph_consistent(sections)
    assert not [s.element_id for s in sections if "missing_refs" in s.metadata]
    refs = sum(len(s.ref_ids) for s in sections)
    assert refs > 5_000


# --------------------------------------------------------------------------- Swagger 2.0

SWAGGER2 = textwrap.dedent(
    """\
    swagger: "2.0"
    info: {title: Users, version: "1.0"}
    basePath: /v1
    consumes: [application/json]
    produces: [application/json]
    securityDefinitions:
      token:
        type: apiKey
        in: header
        name: X-Token
    security:
      - token: []
    parameters:
      userId:
        name: userId
        in: path
        required: true
        type: string
        description: The user's id.
    responses:
      NotFound:
        description: No such user
        schema: {$ref: '#/definitions/Error'}
    paths:
      /users:
        post:
          tags: [users]
          summary: Create a user
          operationId: createUser
          parameters:
            - name: body
              in: body
              required: true
              description: The new user.
              schema: {$ref: '#/definitions/User'}
            - name: dry_run
              in: query
              type: boolean
              default: false
          responses:
            201:
              description: Created
              schema: {$ref: '#/definitions/User'}
            400:
              description: Invalid input
              schema: {$ref: '#/definitions/Error'}
      /users/{userId}:
        parameters:
          - $ref: '#/parameters/userId'
        get:
          tags: [users]
          summary: Get a user
          responses:
            200:
              description: The user
              schema: {$ref: '#/definitions/User'}
            404: {$ref: '#/responses/NotFound'}
    definitions:
      User:
        type: object
        description: A person using the service.
        required: [name]
        properties:
          id: {type: integer, format: int64, readOnly: true}
          name: {type: string, description: Full name}
          role: {type: string, enum: [admin, member]}
          address: {$ref: '#/definitions/Address'}
      Address:
        type: object
        properties:
          city: {type: string}
          owner: {$ref: '#/definitions/User'}
      Error:
        type: object
        properties:
          message: {type: string}
    """
)


def test_swagger2_yaml():
    sections = extract_openapi("users.yaml", SWAGGER2.encode())
    by = _by_ref(sections)
    assert [s.source_ref for s in sections] == [
        "operation=POST /users",
        "operation=GET /users/{userId}",
        "component=schemas/User",
        "component=schemas/Address",
        "component=schemas/Error",
        "component=parameters/userId",
        "component=responses/NotFound",
        "component=securitySchemes/token",
    ]
    f = "users.yaml"
    post = by["operation=POST /users"]
    assert post.metadata["operation_id"] == "createUser"
    assert post.heading_path == ("users", "POST /users")
    assert post.ref_ids == (f"{f}:components/schemas/Error", f"{f}:components/schemas/User")
    # the body parameter becomes the request body, outlined from the definition
    assert "Request body (required):" in post.text
    assert "Content types: application/json" in post.text
    assert "Schema (application/json): User" in post.text
    assert "- name (string, required): Full name" in post.text
    assert "- role (string, one of admin | member)" in post.text
    assert "- address (Address)" in post.text
    assert "- dry_run (query, boolean, default false)" in post.text
    assert "- 201: Created; body: User" in post.text  # integer YAML keys handled
    assert "Security: token" in post.text

    get = by["operation=GET /users/{userId}"]
    assert get.ref_ids == (
        f"{f}:components/parameters/userId",
        f"{f}:components/responses/NotFound",
        f"{f}:components/schemas/User",
    )
    assert "- userId (path, string, required): The user's id." in get.text
    assert "- 404: No such user; body: Error [response NotFound]" in get.text

    # definitions map to component=schemas/NAME and link both ways (User <-> Address)
    user = by["component=schemas/User"]
    assert user.element_id == f"{f}:components/schemas/User"
    assert user.ref_ids == (f"{f}:components/schemas/Address",)
    assert f"{f}:components/schemas/Address" in user.referenced_by
    assert by["component=schemas/Address"].ref_ids == (f"{f}:components/schemas/User",)
    assert by["component=responses/NotFound"].ref_ids == (f"{f}:components/schemas/Error",)
    token = by["component=securitySchemes/token"]
    assert token.metadata["component_type"] == "securitySchemes"
    assert "Type: apiKey" in token.text and "Name: X-Token" in token.text
    _assert_graph_consistent(sections)


# --------------------------------------------------------------------------- refs edge cases


def _spec(components: dict, paths: dict | None = None) -> bytes:
    return json.dumps(
        {
            "openapi": "3.0.3",
            "info": {"title": "t", "version": "1"},
            "paths": paths or {},
            "components": components,
        }
    ).encode()


def test_dangling_ref_is_dropped_and_recorded():
    data = _spec(
        {
            "schemas": {
                "A": {
                    "type": "object",
                    "properties": {
                        "b": {"$ref": "#/components/schemas/B"},
                        "ghost": {"$ref": "#/components/schemas/Ghost"},
                    },
                },
                "B": {"type": "string"},
            }
        },
        {"/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/Nope"}}}}},
    )
    by = _by_ref(extract_openapi("d.json", data))
    a = by["component=schemas/A"]
    assert a.ref_ids == ("d.json:components/schemas/B",)
    assert a.metadata["missing_refs"] == ["#/components/schemas/Ghost"]
    assert "- ghost (Ghost)" in a.text
    op = by["operation=GET /a"]
    assert op.ref_ids == ()
    assert op.metadata["missing_refs"] == ["#/components/responses/Nope"]
    assert "missing_refs" not in by["component=schemas/B"].metadata
    _assert_graph_consistent(list(by.values()))


def test_external_escaped_interior_and_example_refs():
    data = _spec(
        {
            "schemas": {
                "a/b": {"type": "string"},
                "t~x": {"type": "integer"},
                "Host": {"type": "object", "properties": {"inner": {"type": "string"}}},
                "User": {
                    "type": "object",
                    "example": {"$ref": "#/components/schemas/Host"},  # literal data, not a ref
                    "properties": {
                        "slash": {"$ref": "#/components/schemas/a~1b"},
                        "tilde": {"$ref": "#/components/schemas/t~0x"},
                        "inner": {"$ref": "#/components/schemas/Host/properties/inner"},
                        "remote": {"$ref": "other.yaml#/components/schemas/Remote"},
                        "url": {"$ref": "https://example.com/s.json#/X"},
                        "default": {"$ref": "#/components/schemas/t~0x"},
                    },
                },
            }
        }
    )
    by = _by_ref(extract_openapi("e.json", data))
    user = by["component=schemas/User"]
    assert user.ref_ids == (
        "e.json:components/schemas/Host",
        "e.json:components/schemas/a/b",
        "e.json:components/schemas/t~x",
    )
    assert "missing_refs" not in user.metadata  # external refs are skipped, not missing
    assert by["component=schemas/a/b"].referenced_by == ("e.json:components/schemas/User",)
    assert "- slash (a/b)" in user.text
    # a property named "default" is still a property
    assert "- default (t~x)" in user.text
    # the "$ref" inside the example counts only as the interior ref to Host
    host_refs = [s for s in by.values() if "e.json:components/schemas/Host" in s.ref_ids]
    assert [s.source_ref for s in host_refs] == ["component=schemas/User"]

    only_example = _spec(
        {
            "schemas": {
                "Host": {"type": "string"},
                "X": {"type": "object", "example": {"$ref": "#/components/schemas/Host"}},
            }
        }
    )
    x = _by_ref(extract_openapi("e.json", only_example))["component=schemas/X"]
    assert x.ref_ids == ()


def test_long_enums_and_examples_are_capped():
    data = _spec(
        {
            "schemas": {
                "Big": {
                    "type": "object",
                    "properties": {"code": {"type": "string", "enum": [f"v{i}" for i in range(500)]}},
                    "example": {"blob": "x" * 100_000},
                },
            },
            "examples": {"Huge": {"summary": "A big one", "value": list(range(50_000))}},
        }
    )
    by = _by_ref(extract_openapi("big.json", data))
    big = by["component=schemas/Big"].text
    assert "v19" in big and "v20 " not in big and "(480 more)" in big
    assert len(big) < 3_000
    huge = by["component=examples/Huge"]
    assert huge.text.startswith("Example Huge\n\nA big one\n\nValue: [0, 1, 2")
    assert len(huge.text) < 3_000


def test_other_component_types_have_sections():
    data = _spec(
        {
            "parameters": {
                "Limit": {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "maximum": 100},
                    "description": "Page size.",
                }
            },
            "requestBodies": {
                "NewThing": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}},
                }
            },
            "schemas": {"Thing": {"type": "object", "properties": {"n": {"type": "string"}}}},
            "headers": {"X-Rate": {"schema": {"type": "integer"}, "description": "Left."}},
            "links": {"Self": {"operationId": "getThing", "parameters": {"id": "$response.body#/id"}}},
        },
        {
            "/things": {
                "post": {
                    "parameters": [{"$ref": "#/components/parameters/Limit"}],
                    "requestBody": {"$ref": "#/components/requestBodies/NewThing"},
                    "responses": {
                        "201": {
                            "description": "ok",
                            "links": {"self": {"$ref": "#/components/links/Self"}},
                            "headers": {"X-Rate": {"$ref": "#/components/headers/X-Rate"}},
                        }
                    },
                }
            }
        },
    )
    sections = extract_openapi("c.json", data)
    by = _by_ref(sections)
    assert by["component=parameters/Limit"].text == ("Parameter Limit\n\nlimit (query, integer): Page size.")
    assert by["component=requestBodies/NewThing"].ref_ids == ("c.json:components/schemas/Thing",)
    assert "Operation ID: getThing" in by["component=links/Self"].text
    assert "Header X-Rate" in by["component=headers/X-Rate"].text
    op = by["operation=POST /things"]
    assert op.ref_ids == (
        "c.json:components/headers/X-Rate",
        "c.json:components/links/Self",
        "c.json:components/parameters/Limit",
        "c.json:components/requestBodies/NewThing",
    )
    assert "- limit (query, integer): Page size." in op.text
    assert "Request body (required) [request body NewThing]:" in op.text
    assert "Schema (application/json): Thing" in op.text
    _assert_graph_consistent(sections)


# --------------------------------------------------------------------------- bad input


def test_malformed_json_reports_line_and_column():
    data = b'{\n  "openapi": "3.0.0",\n  "paths": {\n    "/a": {,}\n  }\n}\n'
    with pytest.raises(ExtractionError) as info:
        extract_openapi("bad.json", data)
    message = str(info.value)
    assert "JSON" in message and "line 4" in message and "column" in message


def test_malformed_yaml_reports_line_and_column():
    data = b"openapi: 3.0.0\npaths:\n  /a:\n    get: [unclosed\n  /b: {}\n"
    with pytest.raises(ExtractionError) as info:
        extract_openapi("bad.yaml", data)
    message = str(info.value)
    assert "YAML" in message and "line" in message and "column" in message
    line = int(message.split("line ", 1)[1].split(",", 1)[0])
    assert 4 <= line <= 6


@pytest.mark.parametrize(
    "data",
    [
        b"- just\n- a list\n",
        b"plain text",
        b"",
        b'{"info": {"title": "no version key"}, "paths": {}}',
        b"title: not openapi\n",
    ],
)
def test_not_an_openapi_document(data):
    with pytest.raises(ExtractionError, match="not an OpenAPI document"):
        extract_openapi("x.yaml", data)


def test_invalid_utf8_is_an_extraction_error():
    with pytest.raises(ExtractionError, match="UTF-8"):
        extract_openapi("x.yaml", b"openapi: 3.0.0\ninfo: \xff\xfe\xfa\n")
