import pytest

# openai_server is loaded as a pytest plugin (its fixtures) after the test modules import it.
pytest.register_assert_rewrite("tests.synthesis.openai_server")
