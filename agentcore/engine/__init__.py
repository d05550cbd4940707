"""The run engine: the tool loop (:mod:`agentcore.engine.loop`), one model step
(:mod:`agentcore.engine.step`), a step's tool calls
(:mod:`agentcore.engine.tool_calls`), resume and approval for the runs that ask
(:mod:`agentcore.engine.durable_run`), the history policies and
``prepare_step`` for the runs that have them (:mod:`agentcore.engine.prepare`),
the channel between a run's worker
thread and its reader (:mod:`agentcore.engine.channel`), the retry policy
(:mod:`agentcore.engine.retry`) and the observer hook
(:mod:`agentcore.engine.observer`). Internal: import the public names from
:mod:`agentcore`."""
