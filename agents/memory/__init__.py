"""Investigation memory without Django: text matching, rank fusion, the reflection rubric and the prompt block."""
