"""Database backends of TARSy's own (see tarsy.db.postgresql)."""
