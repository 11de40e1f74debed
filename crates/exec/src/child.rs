//! Child wrapper (in progress).
