"""JSON Schema for tools and typed results: schemas built from Python
signatures and types (:mod:`agentcore.schema.signature`), docstring parsing
(:mod:`agentcore.schema.docstrings`) and validation on ``jsonschema``
(:mod:`agentcore.schema.validation`). Internal."""
