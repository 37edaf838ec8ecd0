//! `oshcc`: the C compiler with the OpenSHMEM header and library of unpinned (compiler from
//! `OSHCC_CC`, `CC`, else `cc`; `--showme` prints the command).

fn main() {
    unpinned_shmem::tools::compiler_main(false)
}
