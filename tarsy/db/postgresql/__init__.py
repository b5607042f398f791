"""PostgreSQL as Django ships it, with a connection pool whose borrow check costs no round trip."""
