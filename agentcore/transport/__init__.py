"""HTTP transport shared by the provider adapters: streaming requests that a
cancel interrupts (:mod:`agentcore.transport.http`), the SSE reader
(:mod:`agentcore.transport.sse`), HTTP error bodies and Retry-After
(:mod:`agentcore.transport.errors`) and header checks
(:mod:`agentcore.transport.headers`).

Public: :class:`agentcore.transport.http.CancellableHTTPAdapter`, for callers
who pass their own ``requests.Session``."""
