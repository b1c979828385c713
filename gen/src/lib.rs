//! gen (placeholder)
