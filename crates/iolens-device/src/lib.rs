//! Block devices behind paths (being written).
