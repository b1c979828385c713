//! tb (placeholder)
