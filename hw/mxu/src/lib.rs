//! mxu (placeholder)
