"""SCIM 2.0 provisioning at /scim/v2/ (RFC 7643, 7644): an identity provider (Microsoft Entra ID,
Okta) creates, changes, deactivates and deletes users and groups (teams) here.

Built as thin Django views on ``scim2-filter-parser`` (filters to ORM ``Q`` objects), not on
django-scim2. django-scim2 authenticates through ``request.user`` (a session or a middleware that
signs a *user* in), while our SCIM client is no user: a bearer token of its own model (ScimToken),
never a session. It also wants SCIM fields on the user and group models (its mixins), which
auth.User and auth.Group do not have, and its PATCH handling leaves Entra's quirks (capitalised
ops, "False" as a string, value objects with dotted keys) to each adapter anyway. What is ours:
the token check (accounts.scim.tokens), the resources (users.py, groups.py), PATCH (patch.py),
filters (filters.py) and the HTTP layer (http.py, views.py).

Rules kept everywhere:
- SCIM manages only the accounts and teams it made (ScimAccount, ScimGroup), and only those of
  the token's own source; an existing local account or team is never taken over by its name
  (409 uniqueness), and operators (staff, superusers) are never changed (403).
- Every write runs in one transaction: a refused request changes nothing. Every change and every
  refusal is in the audit log (channel "scim", actor "scim:<source>/<token name>").
- Deactivation (``active: false``) sets ``is_active`` false: the user's page sessions, API tokens
  and MCP requests are refused at their next request, since each path checks ``is_active`` on
  every request (ModelBackend.get_user, accounts.api_tokens.token_authenticate, knowledge.mcp.http).
- DELETE of a user deactivates the account, removes the teams SCIM gave it and ends the SCIM
  link (a later GET is 404); the account and its documents stay for the operator. The same
  source may create the user again with the same userName and externalId: the account comes back.
  DELETE of a group deletes the team SCIM made (collections shared with it stay their owners').
"""
