//! `oshcxx` (link it as `oshc++`): the C++ compiler with the OpenSHMEM header and library of
//! unpinned (compiler from `OSHCXX_CXX`, `CXX`, else `c++`).

fn main() {
    unpinned_shmem::tools::compiler_main(true)
}
