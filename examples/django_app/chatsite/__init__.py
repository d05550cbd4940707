"""A minimal Django project that streams an agentcore run to the browser (see views.py)."""
