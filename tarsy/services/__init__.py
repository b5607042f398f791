"""Every model write, and the multi-row reads the pipeline needs: one module per entity, keyword-only
`<entity>_<action>` functions. Services may decide work that becomes a task (a dispatch, a stage's first
iterations, a reap); they hand it to tarsy.decisions.enact_on_commit, never to tarsy.tasks."""
