import pytest

# Test modules import the model server (real embedding and rerank endpoints, tests/model_server.py).
pytest.register_assert_rewrite("tests.model_server")
