//! The State seam on PostgreSQL.
