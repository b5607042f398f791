"""Investigation memory in the pipeline: reflection after a session is scored or reviewed (reflect), recall into
first prompts (recall). Rows are written through tarsy.services.memories."""
