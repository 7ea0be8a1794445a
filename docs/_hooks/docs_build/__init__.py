"""Builds the parts of the documentation site that are generated from the code (mkdocs.yml's hook).

Nothing here is imported by the application: it reads the application's source and its pure
declarations so the configuration reference and the API pages cannot drift from the code.
"""
