"""Reversible pseudonymisation of identifiers before a model sees them (docs/security.md, Pseudonymisation).

identifiers: what counts as an identifier and how it is found; pseudonyms: a session's mapping both ways;
policy: which providers pseudonymise and where mappings are kept; veil: one LLM call through the mapping.
"""
