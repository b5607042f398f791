"""Request validation and response shapes, one module per resource. Serializers shape; services decide; the reads
they shape come from tarsy.selectors."""
