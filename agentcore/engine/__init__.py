"""The run engine: the tool loop (:mod:`agentcore.engine.loop`), the channel
between a run's worker thread and its reader (:mod:`agentcore.engine.channel`)
and the retry policy (:mod:`agentcore.engine.retry`). Internal: import the
public names from :mod:`agentcore`."""
