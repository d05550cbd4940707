"""Amazon Bedrock: the Converse mapping (``request``, ``stream``) and the models
(``model``)."""
