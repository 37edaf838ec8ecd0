//! A set-associative TLB with LRU or random replacement.
