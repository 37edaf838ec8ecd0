//! CPU cost models of the Touch and Pin schemes (spec part.md, "Alternatives").
