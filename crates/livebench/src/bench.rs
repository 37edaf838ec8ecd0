//! `unpinned bench live`: the speed targets of issue 3, measured side by side in one run
//! (two ranks in this process over the shared-memory transport, medians of repetitions).
//!
//! Before and after caller-driven progress, measured interleaved (before, after, before, ...)
//! on the development VM (2 vCPUs shared with other engineers' builds, load average ~12,
//! release build, `--repeat 3`, three runs each; medians of the three, range in brackets):
//!
//! | what                                   | target     | before                  | after                   |
//! |----------------------------------------|------------|-------------------------|-------------------------|
//! | 8 B write, post to completion          | <= 0.5 us  | 36.4 us (36.2-36.6)     | 7.5 us (7.3-7.8)        |
//! | 4 MiB write bandwidth                  | >= 20 GB/s | 1.36 GB/s (0.93-1.59)   | 2.18 GB/s (0.69-2.36)   |
//! | 4 MiB memcpy on this machine (bound)   |            |                         | 21.5 GB/s (19.3-22.2)   |
//! | pin per transfer / PART, 4 MiB present | >= 3x      | 1.29x (0.92-2.08)       | 1.02x (1.00-1.27)       |
//! | PART / Transfer-Only, 64 KiB           | <= 1.05x   | 1.13x                   | 1.12x                   |
//! | PART / Transfer-Only, 256 KiB          | <= 1.05x   | 1.07x                   | 1.07x                   |
//! | PART / Transfer-Only, 1 MiB            | <= 1.05x   | 0.87x                   | 0.99x                   |
//! | PART / Transfer-Only, 4 MiB            | <= 1.05x   | 1.35x                   | 1.12x                   |
//! | 4 KiB write into a missing page        | <= 10 us   | 76.8 us (75.9-95.0)     | 31.8 us (31.1-39.1)     |
//! | live-hol others, PART / no-fault       | <= 1.2x    | 1.60x (1.60-2.00)       | 0.76x (0.13-1.69)       |
//! | live-hol others, blocking / no-fault   | > 1.2x     | 3.6x (2.2-9.7)          | 1.6x (1.2-3.3)          |
//!
//! Single runs vary by 2-5x on this machine (its load changes by the second), so only large
//! differences mean anything; with an idle core an 8 B write took 2.0 us at best
//! (`examples/lat8.rs`). What is out of reach here, and why:
//!
//! - 8 B in 0.5 us: a write is two hand-offs between threads on different (or, under load,
//!   the same) vCPUs, each a cache-line transfer plus a `sched_yield` when the core is shared,
//!   and two pagemap `pread`s (~1-4 us each on this VM) unless a window from the last 20 us
//!   answers.
//! - 20 GB/s for 4 MiB is the machine's single-core memcpy bound (~21 GB/s, cache-resident);
//!   the live path copies each byte twice (source -> ring slot, slot -> destination) and
//!   checksums it twice, on two threads that share two vCPUs with other jobs.
//! - Pin per transfer 3x slower: `mlock` of 4 MiB already present costs ~0.1 ms; for it to be
//!   two thirds of the time the transfer itself would have to run at ~80 GB/s.
//! - Residency check <= 5%: one pagemap `pread` per 32 pages per side costs 3-4 us under
//!   load, 5-10% of a 64 KiB write; larger windows and a longer trust time halved the reads
//!   without a difference measurable above the noise (see `unpinned_live::memory`).
//! - Missing 4 KiB page in 10 us: the protocol needs two round trips (data -> page-fault NACK
//!   and ERR, retransmission -> ACK) plus the page-in (~5 us for a page of a fresh mapping,
//!   done inline by the engine for small anonymous faults); each hop costs 2-5 us here.
//! - live-hol: the major faults' disk reads slow the whole VM; the ratio varies from run to
//!   run in both versions.

//!
//! # Issue 3's speed work (branch `livefast`), measured
//!
//! What changed: over shared memory a packet is a whole 16 KiB block, read from the source
//! straight into the ring slot and written from the slot into the destination (two copies,
//! on the sender's and the target's threads at the same time), without a software CRC; the
//! residency check is one `PAGEMAP_SCAN` ioctl per 256 KiB window instead of a pagemap `pread`
//! per 32 pages; a small write into missing anonymous memory could be paged in on access (no
//! NACK / ERR round trip; made opt-in afterwards, `progress.fill_on_access_max_pages`: by default
//! every missing page takes the spec's NACK path, which is now the target line). Release build, `--repeat 3`, three runs, median of the three [range];
//! load average 9.5-10.2 (two other engineers' builds on the 2 vCPUs):
//!
//! | what                                      | target     | session start (load 5.9) | now                    |
//! |-------------------------------------------|------------|--------------------------|------------------------|
//! | 8 B write, post to completion             | <= 0.5 us  | 7.11 us                  | 7.06 us [3.38-7.09]    |
//! | floor: one-way ring hand-off, spinning    |            |                          | 0.53 us [0.51-0.54]    |
//! | 4 MiB write bandwidth                     | >= 20 GB/s | 2.82 GB/s                | 4.61 GB/s [3.55-5.03]  |
//! | bound: 4 MiB memcpy, hot, one thread      |            | 20.5 GB/s                | 21.7 GB/s [17.1-24.2]  |
//! | bound: two copies pipelined, two threads  |            |                          | 6.51 GB/s [5.24-9.11]  |
//! | pin per transfer / PART, 4 MiB present    | >= 3x      | 1.14x                    | 1.44x [1.40-1.55]      |
//! | PART / Transfer-Only, 64 KiB              | <= 1.05x   | 1.21x                    | 1.65x [1.00-1.79]      |
//! | PART / Transfer-Only, 256 KiB             | <= 1.05x   | 1.22x                    | 1.32x [1.06-1.48]      |
//! | PART / Transfer-Only, 1 MiB               | <= 1.05x   | 1.29x                    | 1.28x [1.23-1.45]      |
//! | PART / Transfer-Only, 4 MiB               | <= 1.05x   | 1.30x                    | 1.32x [1.24-1.40]      |
//! | scans x scan time / 4 MiB write time      | <= 0.05    |                          | 0.055 [0.051-0.062]    |
//! | 4 KiB into a missing page, on access     | <= 10 us   | 32.3 us (NACK path)      | 21.1 us [20.7-21.2]    |
//! | of which the page-in (MADV_POPULATE)      |            |                          | 4.9 us [4.6-4.9]       |
//! | live-hol others, PART / no-fault          | <= 1.2x    | 0.61x                    | 1.13x [0.57-3.89]      |
//! | live-hol others, blocking / no-fault      | > 1.2x     | 3.89x                    | 4.01x [3.30-13.2]      |
//!
//! Where the targets stand on this machine:
//!
//! - 4 MiB at 20 GB/s is out of reach for any two-copy path here: the two copies pipelined on
//!   two threads with nothing else in the way ([`pipelined_copy_gbytes_s`]) reach 5-6 GB/s at
//!   this load (best single rounds ~11 GB/s; a C program copying source -> ring -> destination
//!   on *one* thread reached 9.7-10.9 GB/s median): the ring's lines move between cores and
//!   the other load takes one of the two. The live write reached 39-110% of the pipelined
//!   bound (measured in the same run), 70-100% in most runs. A single copy needs the source
//!   mapped into the target (cross-memory attach ran at 2.4 GB/s on this kernel), i.e. the
//!   NIC's DMA.
//!   Correction (a later session, merged main, quiet machine at load ~1): the pipelined
//!   two-copy bound measured 20.0 GB/s with the memcpy bound at 26.2, while the live write
//!   reached 6.24 GB/s (31% of it). With both cores free the two copies are not the wall;
//!   the gap is the live path itself (per-block engine work, hand-offs, residency scans).
//! - Pin per transfer 3x: `mlock` + `munlock` of 4 MiB present cost 530 us here (C test), so
//!   PART's 4 MiB write would have to take <= 265 us (15.8 GB/s): the same wall as above.
//! - Residency <= 5%: the check's own cost is now 2-6.5% of a 4 MiB write (~32 scans of
//!   1.8-2.1 us per side: the 20 us trust bound of a verdict ends most of them; trusted for
//!   1 ms, 16-18 scans and PART / Transfer-Only 1.09-1.10x in `examples/check_cost.rs`). The
//!   Transfer-Only comparison itself varies by tens of percent between runs at this load,
//!   and PART stayed 1.2-1.4x at 1-4 MiB, more than its scans explain: not found yet.
//! - 8 B in 0.5 us: the floor is two ring hand-offs with both sides spinning: 2 x 0.51-0.54 us
//!   in most runs, 2 x 0.15 us in one whose two threads got a core each; spinning
//!   made it 62-112 us here (a spinner keeps the thread it waits for off a shared core, see
//!   `unpinned_live::runtime`), so both sides yield, and each yield under load costs microseconds.
//! - Missing 4 KiB page in 10 us: one round trip (3-7 us here) + the page-in (~5 us for one
//!   page of `MADV_POPULATE_WRITE`) + two scans; 19-23 us measured with page-in on access,
//!   40-43 us with the NACK / ERR path (the default since, and the target line of the bench;
//!   28-41 us in quiet interleaved runs at the end of the session).
//! - live-hol: at load ~10 the other transfers' latency without any fault varied 4x between
//!   runs (177-1087 us) and the faulting transfer's major faults took 0.1-0.9 s; the PART ratio
//!   ranged 0.16-5x over the session's runs with 16 KiB packets and 0.4-5.9x with 4 KiB ones.
//!   Its median stays under 1.2x above, the blocking engine was worse in every run. Shm rings
//!   once capped at 127 slots dropped the faulting transfer's NACKs and ERRs (see
//!   `ShmGeometry::new`); the faulting transfer's blocks are resent every block timeout
//!   (10 ms) while their major faults last (~2000 timeouts in 5 repetitions), as designed.
//!
//! # Latency and correctness follow-up (branch `livelat`), measured
//!
//! Release build; `bench live --repeat 15`, two sets of three runs: A at load average
//! 4.9-5.0, B twenty minutes later at 4.1 (two other engineers' jobs at nice 19); medians of
//! each set [range]:
//!
//! | what                                        | target     | last session (brief) | A                   | B                   |
//! |---------------------------------------------|------------|----------------------|---------------------|---------------------|
//! | 8 B write, defaults (no pinning, no spin)   | <= 0.5 us  | 7.4 us               | 7.63 [7.24-7.74]    | 2.56 [2.49-6.99]    |
//! | 8 B write, dedicated cores (pinned, spin)   | <= 0.5 us  | (not measured)       | 0.88 [0.88-0.89]    | 1.76 [1.68-1.80]    |
//! | floor: one-way ring hand-off, spinning      |            | 0.13-0.15 us         | 0.14 [0.13-0.14]    | 0.14                |
//! | 4 KiB into a missing page (NACK path)       | <= 10 us   | 27.8-41.4 us         | 25.9 [25.8-26.7]    | 21.1 [20.2-24.2]    |
//! | the same, dedicated cores                   | <= 10 us   |                      | 25.1 [24.5-25.4]    | 30.0 [29.4-31.0]    |
//! | of which the page-in (inline, populate)     |            | 4.2-7.9 us           | 4.4 [4.2-4.7]       | 4.3 [4.2-4.4]       |
//! | PART / Transfer-Only, 64 KiB                | <= 1.05x   | 1.11-1.66            | 1.44 [1.36-2.18]    | 1.16 [1.03-1.43]    |
//! | PART / Transfer-Only, 4 MiB                 | <= 1.05x   | 1.20-1.30            | 1.51 [1.22-1.85]    | 1.22 [1.15-1.28]    |
//! | scans x scan time / 4 MiB write time        | <= 0.05    | 0.055-0.11           | 0.056 [0.047-0.061] | 0.060 [0.058-0.068] |
//! | live-hol others PART / no-fault (15 reps)   | <= 1.2x    | 1.44-2.15            | 0.45 [0.22-0.78]    | 2.40 [1.13-6.70]    |
//!
//! `live-hol` alone with 31 repetitions, three runs at load ~4.9: others PART / no-fault
//! 2.7x [0.83-12] (1.75-2.5x at the start of this session), the faulting 1 MiB file write
//! 3.9-4.6 ms under PART (0.14-0.9 s at the start of this session) and 9.9-18.7 ms under
//! the blocking engine. The dedicated-core configuration depends on what else runs on its two
//! CPUs: set A and set B used the same binary code, twenty minutes apart.
//!
//! - Correctness: "one rank never received a data packet" with 16 outstanding blocks was the
//!   engine counting each block timer of a window against `max_timeouts` (see
//!   [`unpinned_live::api::LIVE_DEFAULTS`]); fixed in crates/part with a regression test.
//! - live-hol: `MADV_POPULATE_WRITE` of a file mapping under `MADV_RANDOM` read one page at a
//!   time (860-910 ms per MiB); `MADV_WILLNEED` first makes it 1.7-1.9 ms, and populating in
//!   64 KiB chunks stopped one long populate from stalling the target engine's residency
//!   scans behind the mmap lock (a trace showed the target receiving nothing for ~1.5 ms
//!   during the page-in). The faulting transfer went from 0.14-0.9 s to ~4 ms (the blocking
//!   engine: 10-19 ms). The others still take ~2-3x their no-fault time: on two shared vCPUs
//!   the page-in thread's work (reads, copies, page-cache work) competes with both engine
//!   threads; lowering its priority (nice 10) made them slower, not faster. Not met.
//! - Missing 4 KiB page: a trace (in-memory, timestamps) of one write: scan + pagemap `pread`
//!   and `mincore` before the NACK (~10 us with tracing), the ERR a turn after the NACK, a new
//!   scan for the retransmission, and four hand-offs. Now the scan's "not good" is followed
//!   by `mincore` only, the inline page-in leaves a good verdict, and events are routed before
//!   transmitting (NACK and ERR leave together). What remains here: four hand-offs (~2.2 us
//!   each with the defaults), the page-in (~4.4 us), two source scans at the sender and
//!   ~8 us of posting after the fresh mapping's expose. Not met; with dedicated cores the
//!   hand-offs shrink to ~1 us (traced) but the write measured 24.5-31 us, no better than the
//!   defaults: not understood yet (the posting and the scans remain; the target's spinning
//!   progress thread also holds its core's lock for the `expose` of each fresh page).
//! - Residency share: at 256 KiB, 300 alternating writes per engine
//!   (`examples/check_cost.rs`), PART / Transfer-Only was 1.21-1.29 (one run 3.0) with the
//!   20 us trust bound and 1.02-1.13 with verdicts trusted for a second (no scans): the cost is
//!   real and is the scans taken again as verdicts expire. The lever is the trust bound, i.e.
//!   how long a page may have left before the engine touches it (see
//!   `unpinned_live::memory`); it was not changed. At 4 MiB the comparison varied 0.96-2.2
//!   between runs at this load.
//!
//! # Residency cache and bandwidth (branch `livemem`), measured
//!
//! What changed: the translation cache (`unpinned_os::residency_cache`: verdicts of watched
//! exposures and large sources trusted until a userfaultfd event instead of 20 us), 16
//! outstanding blocks instead of 8, and the shm ring's index caching (each side reloads the
//! other's index only at full / empty; the doorbell is bumped only for a sleeping consumer).
//! Release build, `bench live` three times each, interleaved: *after* = this branch, *before*
//! = the same binary with `UNPINNED_SET=memory.residency_cache=false,engine.max_outstanding_blocks=8`
//! (the index caching cannot be switched off); load average 5.8-6.3 (other engineers' jobs on
//! the 2 vCPUs); medians of the three [range]:
//!
//! | what                                      | target     | before                 | after                  |
//! |-------------------------------------------|------------|------------------------|------------------------|
//! | 4 MiB write bandwidth                     | >= 20 GB/s | 3.63 GB/s [1.79-3.92]  | 5.51 GB/s [5.51-5.70]  |
//! | bound: two copies pipelined, two threads  |            | 4.85 GB/s [4.74-5.23]  | 4.78 GB/s [4.45-4.87]  |
//! | bound: 4 MiB memcpy, one thread           |            | 22.7 GB/s [21.6-23.5]  | 22.5 GB/s [22.5-28.2]  |
//! | pin per transfer / PART, 4 MiB present    | >= 3x      | 1.24x [1.23-1.39]      | 1.73x [1.70-1.79]      |
//! | PART / Transfer-Only, 64 KiB              | <= 1.05x   | 1.23x [1.16-1.41]      | 0.95x [0.86-1.25]      |
//! | PART / Transfer-Only, 256 KiB             | <= 1.05x   | 1.36x [1.31-1.71]      | 0.78x [0.66-1.34]      |
//! | PART / Transfer-Only, 1 MiB               | <= 1.05x   | 1.50x [1.16-1.52]      | 0.80x [0.67-1.18]      |
//! | PART / Transfer-Only, 4 MiB               | <= 1.05x   | 1.37x [1.34-1.89]      | 1.02x [0.85-1.10]      |
//! | scans per 4 MiB write (busier side)       |            | 32.2 [32.0-32.2]       | 0 [0-0]                |
//! | scans x scan time / 4 MiB write time      | <= 0.05    | 0.051 [0.026-0.056]    | 0                      |
//! | live-hol others, PART / no-fault          | <= 1.2x    | 1.53x [0.65-6.36]      | 2.96x [0.60-4.30]      |
//!
//! Two more pairs of runs when the load had dropped to ~1.3 (after, before): 4 MiB 9.05 and
//! 8.66 GB/s against 6.87 and 6.62 GB/s (the two-copy bound 5.5-12.8 GB/s in the same runs,
//! memcpy 26-31 GB/s); pin per transfer / PART 2.14x and 2.29x against 1.63x and 1.66x;
//! PART / Transfer-Only 0.98 / 1.11 / 1.11 / 0.97 and 1.09 / 0.99 / 0.76 / 0.95 (64 KiB,
//! 256 KiB, 1 MiB, 4 MiB) against 1.98 / 1.44 / 1.82 / 1.25 and 1.66 / 1.18 / 1.21 / 1.14;
//! check cost 0 against 0.093 and 0.067.
//!
//! The bench's PART / Transfer-Only lines rest on 15-50 writes per size and swing by tens of
//! percent; `unpinned live live-residency --set exp.rounds=60` (300 writes per engine and size,
//! the order of the three engines rotating) measured, three runs at load 4.5-4.8, median of
//! the runs' ratios [range]: with the cache 0.95 [0.95-1.01] at 64 KiB, 0.95 [0.75-1.01] at
//! 256 KiB, 0.86 [0.72-1.03] at 1 MiB, 1.02 [0.82-1.08] at 4 MiB; the same binary with the
//! cache off (TTL rule) 1.25 / 1.15 / 1.27 / 1.29 (a fourth run at load ~1.4: cache 0.97 /
//! 1.01 / 1.04 / 0.93, TTL 1.33 / 1.35 / 1.21 / 1.04), with 0.8-0.9 / 2 / 6-8 / 23-32 scans per
//! write on each side, against 0 with the cache at every size (the 64 KiB source is watched
//! too). The residency target is met where this machine's noise lets a ratio be read: the
//! check now costs no system call on present, watched memory.
//!
//! Bandwidth, where a 4 MiB write goes:
//!
//! - At this load the live write matched the two-copy bound measured in the same runs (5.51
//!   against 4.78 GB/s, medians above; 6.24 against 6.70 GB/s in a single run at load ~4; the
//!   bound's own threads yield under load as the live ones do): the copies on two shared
//!   cores, not the live path, are the wall here. 16 outstanding blocks instead of 8: 4 MiB PART writes took
//!   651-940 us against 786-963 us (`examples/check_cost`, four interleaved rounds, faster in
//!   each); 32 no better than 16.
//! - The ring's index caching and the doorbell change made no difference measurable at load
//!   ~4-5 (`check_cost` 4 MiB, six alternating runs each: PART 472-839 us after, 473-825 us
//!   before); they remove one cross-core line transfer per packet per side and an atomic
//!   read-modify-write per packet, which matters only when both threads have a core.
//! - Alignment of the payload in the ring slot (55 B into the slot) costs nothing measurable
//!   (C test: 16 KiB copies at offset 0, 55 and 64 ran at 26-27 GB/s alike on one core).
//! - `perf record` of 4 MiB writes: `memmove` is 44% of all samples (sender 24%, target
//!   20%), the idle polling (`sched_yield`, scheduling, `clock_gettime`) ~30%, engine code
//!   (turns, packet handling, ring, timers, residency) ~10%.
//! - A single copy for same-host ranks, cross-memory attach (C test, `process_vm_writev` of
//!   4 MiB into a present buffer of another process, medians of 51, three runs at load ~4.8):
//!   5.8-6.3 GB/s in 4 KiB iovecs, 8.7-9.0 GB/s in 64 KiB ones, 8.1-9.8 GB/s in 1 and 4 MiB
//!   ones (best single copies 10.3-10.8 GB/s), against 23-27 GB/s for `memcpy` in one
//!   process: the kernel pins and maps the remote pages one by one. Faster than the two-copy
//!   path under load (and it needs the target's residency checked first, or it faults the
//!   pages in while holding them), but half of 20 GB/s at best.
//! - 20 GB/s: out of reach on this machine for a path between two processes. `memcpy` itself
//!   runs at 22-28 GB/s on one core; any two-copy path needs both cores (4.5-6.7 GB/s measured
//!   at load 4-6, 20 GB/s once on a quiet machine, see above), and the kernel's single copy
//!   peaks at ~10.8 GB/s. Only a mapping of the target's memory into the sender (XPMEM-like,
//!   not in mainline Linux) or a NIC's DMA would copy once at memory speed.
//! - Pin per transfer 3x: `mlock` + `munlock` of 4 MiB cost 520 us here (C test); for 3x the
//!   PART write would have to take ~260 us (16 GB/s): the same wall as the bandwidth.

//!
//! # Latency follow-up 2 (branch `livelat2`), measured
//!
//! Load average 2.4-8.7 throughout (a nice-19 simulator and nice-5 builds of two other
//! engineers on the same 2 vCPUs): the "dedicated" cores were shared with them. Release
//! build; `bench live` (5 rounds, ~2 s per run), interleaved old (`main` at a57d82a) / new,
//! medians \[range\]:
//!
//! | what                                     | target   | old, 5 runs, load 3.7-4.1 | new, same         | old, 6 runs, load 4.4-8.7 | new, same          |
//! |------------------------------------------|----------|---------------------------|-------------------|---------------------------|--------------------|
//! | 8 B write, defaults                      | <= 0.5   | 7.26 [1.65-7.59]          | 7.03 [6.76-7.42]  | 7.32 [4.05-7.86]          | 7.28 [7.09-7.37]   |
//! | 8 B write, dedicated cores               | <= 0.5   | 0.89 [0.88-1.71]          | 1.00 [0.91-1.16]  | 1.81 [1.68-1.93]          | 1.79 [1.77-1.99]   |
//! | floor: ring hand-off one way             |          | 0.14 [0.13-0.48]          | 0.14 [0.13-0.49]  | 0.47 [0.44-0.49]          | 0.45 [0.43-0.46]   |
//! | 4 KiB into a missing page, defaults      | <= 10    | 23.9 [16.8-24.5]          | 22.4 [16.6-23.8]  | 24.3 [23.1-25.8]          | 23.6 [23.1-24.1]   |
//! | the same, dedicated cores                | <= 10    | 24.5 [24.0-29.5]          | 24.4 [23.7-24.8]  | 29.8 [28.8-31.7]          | 30.3 [29.5-31.1]   |
//! | live-hol others PART / no-fault          | <= 1.2x  | 2.98 [2.67-3.84]          | 1.52 [0.48-6.29]  | 2.84 [0.47-6.34]          | 1.39 [0.61-2.90]   |
//! | over 64-slot rings: 8 B, defaults        |          |                           | 4.83 [4.79-4.96]  |                           | 5.01 [4.70-5.44]   |
//! | 64 slots: 8 B, dedicated                 |          |                           | 0.88 [0.88-0.90]  |                           | 1.81 [1.72-1.94]   |
//! | 64 slots: missing page, dedicated        |          |                           | 13.7 [13.5-14.0]  |                           | 19.8 [18.9-20.4]   |
//! | 64 slots: live-hol no-fault others, us   |          |                           | 152 [130-174]     |                           | 150 [141-212]      |
//! | 512 slots: live-hol no-fault others, us  |          |                           | 1085 [805-3419]   |                           | 1789 [905-4768]    |
//!
//! Where the time goes, read from the live path's trace ([`unpinned_live::trace`],
//! `examples/trace_write.rs`, dedicated cores; every trace point costs ~0.06-0.1 us):
//!
//! - 8 B write (0.87-1.0 us untraced at load ~2.5-3.5; 1.6-2.0 us traced): the engine's
//!   post 0.1-0.17, the posting turn until the packet is in the ring 0.27-0.29, hand-off
//!   0.07-0.12, the target's handling (trusted verdict, 8 B write, ACK queued) 0.22-0.5, until
//!   the ACK is in the ring 0.16-0.26, hand-off 0.1-0.15, ACK handling 0.15-0.23, completion
//!   queued 0.1, wait returns 0.1-0.16; 0.15-0.2 residency scans per write per side (20 us
//!   verdicts). `perf` put 21-29% of both spinning threads' cycles in `clock_gettime`
//!   (~35 ns a read here): each idle turn read the clock once or twice and the ring's consumer
//!   index (a line the peer writes). Idle turns now read neither (60 -> 24-28 ns per turn),
//!   the waiting caller and the spinning progress thread read the clock every 16 / 32 polls.
//!   The write did not get measurably faster (table): it is ~4-7 ring hand-offs of the same
//!   run, and what remains is spread thin over post, two turns per side and the completion.
//!   0.5 us is out of reach here: two hand-offs alone are 0.3-1.0 us on this VM.
//! - 4 KiB into a missing page, dedicated, 512-slot rings (24.7 us traced, load ~3.5), with
//!   probes around the memory accesses: the sender's source read 6.9 us (a new scan, its
//!   verdict having expired between writes, plus the copy into the ring slot), the target's
//!   write attempt 3.6 us (the scan from the fresh page finds no good prefix and walks 256 KiB
//!   ahead, then `mincore`, then the NACK), the inline page-in 3.1 us, the retransmission's
//!   source read 4.4 us and write 2.5 us (verdicts valid: only the copies), hops and engine
//!   ~3 us. Through a 16-slot ring the retransmission's copies took 0.23 and 0.21 us and the
//!   write 12.9-13.0 us instead of 24.4-24.9 (interleaved runs, load 3.4): every packet takes
//!   a whole 16 KiB slot and a ring is walked slot by slot, so with 512 slots (8 MiB per
//!   direction) a slot comes back 512 packets later with its lines out of both cores' L2
//!   (1 MiB each). That is also why the dedicated-core configuration was the slower one:
//!   with caller and target on different cores every slot line crosses cores (0.03-0.06
//!   context switches per write: not scheduling), while the defaults often run both on one
//!   core; over 64-slot rings the dedicated write is 13.7-19.8 us and the defaults' 23-25 us
//!   do not change. The remaining ~13 us (quiet) are two scans and a `mincore` (~6 us,
//!   `unpinned_live::memory`, whose invalidated translation cache is another engineer's
//!   work), the page-in (2.5-3 us) and ~4 hops.
//! - The page-in of one fresh page (C test on this VM, 3000 each, one CPU): `MADV_POPULATE_WRITE`
//!   p50 2.50 us (mean 2.61), a first-touch fault 1.87 us, populate of a page dropped with
//!   `MADV_DONTNEED` 2.33 us (mean 6.44: outliers); a thread spinning on the other CPU left the
//!   medians unchanged (it raised `munmap`'s mean from 7.3 to 18.2 us: the TLB shootdown IPI
//!   goes to the spinning CPU, outside the measured write). The bench's "page-in (mean)"
//!   3.8-5.1 us is a mean with outliers and two clock reads; the inline page-in is one
//!   `madvise` of one 4 KiB page (64 KiB chunks, `MADV_WILLNEED` and THP, which is
//!   `madvise`-only here, play no part). The ~2.5 us floor is this VM's page allocation and
//!   zeroing plus its EPT.
//! - `memory.residency_ttl_us=1000000` cannot be used for the missing-page line: the fresh
//!   4 KiB mapping often lands where the previous one was unmapped, whose verdict is still
//!   trusted, so no NACK is sent and the engine thread takes the CPU fault itself (11.6 us,
//!   the target's write 4.85 us): the stale-translation hazard that the 20 us bound limits.
//! - live-hol: the other transfers lose most in the repetitions where they complete around
//!   the end of the faulting transfer's page-in (1-2 ms of major faults). The engine threads'
//!   off-CPU stacks were `sched_yield` (443 of ~500 switches) and sleeps, never a lock (no
//!   mmap lock, no mutex); traced stalls were the sender not receiving the ACKs waiting in its
//!   ring for ~750 us, or the target not receiving sent data: with yielding as the idle
//!   policy, a thread that yields goes behind every runnable thread, the page-in thread and
//!   the other jobs included, for a scheduler slice. The page-in thread at nice 19 made the
//!   others wait 8-9 ms (its page-in took longer). Over 64-slot rings the no-fault others take
//!   ~150 us instead of 0.9-1.8 ms and the faulting transfer's ms-long page-in dominates the
//!   ratio (3.5-24x); not met. With 64-slot rings (`examples/trace_hol.rs`, 30 repetitions,
//!   load ~4): others 486-495 us with the file fault against 168-218 us without it, and
//!   582 us with an anonymous faulting destination (no I/O at all; its 1 MiB page-in took the
//!   faulting transfer to 829 us); the process used 1.45 ms of CPU per anonymous repetition
//!   against 0.63-0.67 ms without the fault. The others' slowdown is CPU: the page-in thread
//!   needs a core while the sender's and the target's threads need both of the VM's two, and
//!   `MADV_POPULATE_WRITE` of 256 pages is ~0.64 ms of it; waking the caller's progress
//!   earlier (`progress.wait_yield_us=0`) changed nothing (others 559-938 us against 564-668 us,
//!   four interleaved pairs). On two cores shared with other jobs the 1.2x target is out of
//!   reach while a page-in overlaps the other transfers. Also fixed: a progress thread whose turn found the engine held by
//!   a posting caller went through the transport's sleeper, which returned at once (the rings
//!   had data), a sleep / wake pair every ~0.1 us for the length of the post; it yields now.
//!
//! # Latency follow-up 3 (branch `livelat3`), measured
//!
//! What changed (crates/live, see `unpinned_live::runtime`, "The small-write path"): a post
//! wakes its progress thread only when the transfer has packets left or a deadline sooner than
//! the thread's longest sleep (the wake-up was an atomic add and a fence on the shm line that
//! also holds this rank's `sleeping` word, read by the peer at every packet it sends here); a
//! turn with work reads the clock once for the engine and the residency expiry (twice before),
//! a post's turn reuses the post's read, a wait reads the clock first after 16 polls (a
//! shorter wait reads none);
//! adaptive spinning for unpinned spinners. Release build, `bench live` (~2 s each),
//! interleaved old (`28397b0`, the starting binary) / new, two sets of three runs, medians
//! \[range\] (load average: set A 4.1-4.2, set B 5.7-7.5; a nice-19 simulator, nice-10 builds
//! and other benchmarks on the same 2 vCPUs):
//!
//! | what                                    | target  | A old             | A new             | B old             | B new             |
//! |-----------------------------------------|---------|-------------------|-------------------|-------------------|-------------------|
//! | 8 B write, dedicated cores, us          | <= 0.5  | 1.14 [0.85-1.40]  | 0.80 [0.80-0.80]  | 1.77 [1.76-2.13]  | 1.65 [1.55-1.85]  |
//! | 8 B write, defaults, us                 | <= 0.5  | 5.67 [1.67-6.51]  | 5.24 [1.56-5.76]  | 5.61 [5.60-5.61]  | 5.28 [5.26-5.51]  |
//! | floor: ring hand-off one way, us        |         | 0.14 [0.14-0.14]  | 0.14 [0.14-0.17]  | 0.45 [0.45-0.51]  | 0.50 [0.49-0.56]  |
//! | 4 KiB into a missing page, defaults, us | <= 10   | 20.8 [18.1-26.0]  | 17.6 [17.1-25.0]  | 25.0 [23.6-25.4]  | 24.6 [24.5-25.1]  |
//! | the same, dedicated, us                 | <= 10   | 28.2 [26.5-44.7]  | 25.6 [25.6-26.3]  | 33.4 [32.0-34.5]  | 33.4 [32.7-33.9]  |
//! | live-hol others PART / no-fault         | <= 1.2x | 2.35 [0.76-2.88]  | 5.24 [5.13-5.84]  | 2.13 [1.33-5.92]  | 0.87 [0.45-1.48]  |
//! | 64-slot rings: 8 B, dedicated, us       |         | 0.83 [0.82-0.98]  | 0.79 [0.74-0.93]  | 2.03 [1.70-2.09]  | 1.93 [1.53-2.24]  |
//!
//! Two more sets with the final binary (one clock read less per wait than the "new" above):
//! C at load 6.6-7.1, when the two threads shared cores (ring hand-off 0.41-0.49 us), and D
//! at load 1.9-2.0 (hand-off 0.13-0.14 us):
//!
//! | what                                    | C old             | C new             | D old             | D new             |
//! |-----------------------------------------|-------------------|-------------------|-------------------|-------------------|
//! | 8 B write, dedicated cores, us          | 1.63 [1.61-1.74]  | 1.61 [1.54-1.91]  | 0.96 [0.91-1.06]  | 0.79 [0.79-1.00]  |
//! | 8 B write, defaults, us                 | 5.13 [4.96-5.32]  | 5.19 [4.89-5.96]  | 5.33 [5.14-7.11]  | 5.26 [4.91-5.44]  |
//! | 4 KiB into a missing page, defaults, us | 20.8 [20.5-24.4]  | 24.1 [21.1-24.8]  | 23.3 [18.1-24.9]  | 22.4 [17.8-22.5]  |
//! | the same, dedicated, us                 | 31.0 [30.5-32.8]  | 31.3 [30.6-32.1]  | 24.7 [24.5-38.2]  | 24.5 [24.1-37.1]  |
//! | live-hol others PART / no-fault         | 1.54 [1.44-1.88]  | 1.23 [0.97-2.06]  | 1.62 [1.30-1.79]  | 1.47 [1.33-2.50]  |
//! | 64-slot rings: 8 B, dedicated, us       | 1.53 [1.52-2.11]  | 1.56 [1.49-1.58]  | 0.89 [0.85-1.11]  | 0.78 [0.77-0.95]  |
//!
//! A set E (load falling from 6.8 to 3.1 during it): dedicated 8 B old 1.40 [0.90-1.89], new
//! 0.96 [0.76-0.99]; defaults old 2.81 [1.92-5.15], new 2.39 [1.88-4.77]; missing page old
//! 24.6 [19.5-29.6], new 24.4 [23.1-24.5]; dedicated missing page old 34.6 [24.1-40.9], new
//! 34.3 [24.4-37.2]; live-hol old 1.55 [1.48-1.85], new 1.34 [0.83-4.26]; 64-slot dedicated
//! 8 B old 1.19 [0.84-1.79], new 0.94 [0.75-1.40].
//!
//! When the two threads share cores nothing measured here differs; with the cores free the
//! dedicated 8 B write is ~0.15-0.35 us faster. `examples/lat8_loop.rs`, dedicated, at load
//! 2.2-3.8 (the process got 1.1-2.1 CPUs): old 2.05, 0.90, 0.89 us median (three runs), new
//! 0.81-1.23 us (seven runs, median of medians 0.87; p10 0.76-1.08). A hand-off of the
//! completion to the waiter that drove the turn, bypassing the completion queue's lock, was
//! measured and dropped: 0.86-1.90 us (median 1.13) against 0.81-1.23 us (0.87) without it,
//! seven interleaved pairs.
//!
//! The live-hol line of `bench live` rests on 5 repetitions; `unpinned live live-hol` (31),
//! seven interleaved pairs at load 3.6-5.6: PART / no-fault old 0.99 [0.32-2.52], new 1.30
//! [0.51-2.50]; the PART run's other transfers old 1603 us [1259-3827], new 1997 us
//! [1460-4153]; the no-fault run alone took 0.3-4.0 ms in both versions. The fault path was
//! not changed (the progress thread's idle policy is the same without spin); the spread is the
//! machine's.
//!
//! `examples/lat8_loop.rs` (20000 writes per run, three interleaved runs each, load 4.6-5.2),
//! medians of the runs' medians \[range\]; "spin 20" is `progress.spin_us=20
//! progress.wait_spin_us=20` without pinning:
//!
//! | 8 B write, us                               | old                          | new                         |
//! |---------------------------------------------|------------------------------|-----------------------------|
//! | defaults (no spin)                          | 5.19 [4.91-5.23]             | 4.83 [4.78-4.94]            |
//! | spin 20, unpinned                           | 2.26 [2.24-52.3], p99 62-355 | 4.90 [2.22-5.01], p99 18-26 |
//! | dedicated cores                             | 2.20 [2.15-2.47]             | 2.02 [1.98-2.08]            |
//! | CPU in the idle second after (defaults), ms | 13.0 [10.0-14.9]             | 9.1 [8.0-11.2]              |
//!
//! - Dedicated: 0.80 us in the quieter set, down from 0.85-1.40; 0.5 us is still out of reach
//!   here. The engine's own work for one 8 B write, alone in one thread
//!   (`FORTH_ARM=1 examples/engine_8b.rs`, flat memory, no rings, load ~4): post 48, data
//!   packet out 53-58, data in
//!   (write + ACK queued) 70 ns with a small receive table but 190-330 ns at one write per
//!   microsecond, ACK out 35, ACK in + completion 68 ns (each with one ~25 ns clock read of
//!   the measurement). The responder keeps every block's receive state for
//!   `rx_state_idle_us` (20 ms) and sweeps it every 20 ms, so at 1 M writes/s its table holds
//!   20-40 k blocks (~80 B of slab + ~37 B of hash index each): every new block's index probe
//!   misses the caches, and the sweep took ~10% of the engine's time (`perf`). That table is
//!   crates/part's (not changed here: the simulator's results must stay identical); a window
//!   per source over sequential transfer ids would keep the lookups in cache. In the live
//!   path it did not show above the noise: `bench live --set engine.rx_state_idle_us=200` (a
//!   table ~100x smaller) measured the dedicated 8 B write at 0.89 / 1.08 / 0.87 us against
//!   1.85 / 0.87 / 1.73 us with 20 ms (interleaved, load 2.5-3.2). With two
//!   hand-offs at 0.14 us and ~0.3 us of engine work at one write per microsecond, the rest
//!   is the runtime (locks of the engine and of the completion queue, the shm doorbell fence
//!   after each packet) and cross-core line transfers.
//! - Defaults: the 5.5 us over the dedicated case are scheduling. A null system call costs
//!   0.54 us on this VM and `sched_yield` 0.9-1.4 us (C loop), so a yield-polling thread sees
//!   a packet up to ~1.2 us late, and when the caller and the target's progress thread share
//!   one vCPU (the usual case at this load: the process got 1.00 CPU in most runs) every
//!   write is two context switches. Bounded spinning does not fix it here: 20-50 us of spin
//!   without back-off gave 2.1 us when the threads ran apart and 48-108 us when they shared a
//!   core (bimodal from run to run and within runs); a yield every 16 / 64 / 256 polls of the
//!   spin gave 9.1 / 13.1 / 2.1-34.6 us (the peer's answer then waits for the spinner's next
//!   yield); with the adaptive back-off a bad spin costs at most one spin per 64 writes, and
//!   `bench live` with 20 us of adaptive spin measured 8 B 9.79 / 4.77 / 2.21 us against
//!   5.02 / 6.36 / 6.21 without (interleaved, load 4.6-5.3), missing page 22.8-24.2 against
//!   24.5-25.9 us, live-hol PART / no-fault 9.37 / 3.66 / 3.26 against 2.04 / 3.12 / 2.96.
//!   Not a clear win on two shared vCPUs, so the defaults keep no spin; the adaptive spin is
//!   what `progress.spin_us` / `progress.wait_spin_us` now do without pinning. Idle CPU (the
//!   process over one idle second after the writes: progress threads asleep on their
//!   doorbells, 5 ms sleeps) is ~1% of a CPU in both versions.
//! - Defaults, where the rest goes: placement. With the machine nearly idle (load ~1) the
//!   same binary measured 1.2 us when the waiting caller and the target's progress thread ran
//!   on a CPU each (the process used 2.0 CPUs) and 4.4-4.6 us when they shared one (1.0 CPU;
//!   `examples/lat8.rs` and `lat8_loop.rs`, back to back). Two yield-polling threads look
//!   like two full CPUs of load to the balancer wherever they run, so once placed together
//!   (another job on the other CPU at that moment) they stay together. In the runs with a CPU
//!   each (lat8_loop, load 0.9-1.4, three interleaved rounds): old defaults 1.37-1.42 us, new
//!   1.22 us (all three), new with 20 us of adaptive spin 0.85-1.21 us, with 50 us 0.83-1.04
//!   us, idle CPU unchanged (3-12 ms per second). Tried and dropped: the unpinned progress
//!   thread moving itself to another CPU (affinity without its CPU, then its whole set back)
//!   when most of 64 yields returned after more than 2 us. With a nice-19 CPU hog started
//!   next to the run, the median went from 5.5-6.5 to 3.2-5.6 us but p99 from 16-36 us to
//!   1.0-2.1 ms (the moved thread then shared its CPU with the hog's time slices), and
//!   without the hog it made no difference (1.8-3.8 against 1.6-2.7 us).
//! - The sender re-scans its 8 B source every 20 us (0.18 scans per write, ~1.9 us each, when
//!   a write takes ~2 us): the median does not see it, the mean does. Sources under 64 KiB are
//!   not watched by the translation cache (crates/live memory.rs, not changed here).

//!
//! # A write into a missing page (branch `livemiss`), measured
//!
//! What changed: the shm ring is a ring of 128-byte descriptors (packets of <= 120 bytes
//! inline: ACK, NACK, ERR, 8 B writes) with payload slots taken from a per-producer stack,
//! most recently given back first ([`unpinned_live::transport::shm`], segment layout version
//! 3); the residency probe of a range is one `PAGEMAP_SCAN` that stops at the end of the run
//! of pages alike from the first page and tells a missing page from an unmapped one without
//! `mincore` ([`unpinned_os::scan::probe`]); its window stops at the end of the exposure or
//! small posted buffer the range lies in. Release build, `bench live` (5 rounds), four
//! interleaved pairs, old = `main` at 28397b0, new = this branch; load average 4.0 falling to
//! 2.5 (other engineers' builds and simulator); medians of the four \[range\]:
//!
//! | what                                      | target   | old                   | new                   |
//! |-------------------------------------------|----------|-----------------------|-----------------------|
//! | 8 B write, defaults                       | <= 0.5   | 5.27 [4.91-6.52]      | 4.60 [4.56-4.63]      |
//! | 8 B write, dedicated cores                | <= 0.5   | 1.34 [0.81-2.18]      | 0.83 [0.83-2.13]      |
//! | 4 MiB write bandwidth, GB/s               | >= 20    | 5.32 [3.59-6.18]      | 6.86 [4.43-7.55]      |
//! | 4 KiB into a missing page, defaults       | <= 10    | 24.6 [24.3-25.0]      | 18.2 [17.6-18.3]      |
//! | of which the page-in (mean)               |          | 4.35 [3.9-4.6]        | 4.15 [3.9-5.2]        |
//! | 4 KiB into a missing page, dedicated      | <= 10    | 31.6 [25.6-41.3]      | 9.4 [9.3-15.6]        |
//! | live-hol others PART / no-fault           | <= 1.2x  | 1.82 [0.74-2.99]      | 5.28 [3.67-6.41]      |
//! | live-hol others, PART, us (ratio x no-fault) |       | 2659 [1816-3105]      | 588 [462-796]         |
//! | live-hol others, no fault, us             |          | 2068 [608-3621]       | 122 [83-175]          |
//! | 64 slots: missing page, defaults          |          | 33.8 [24.8-62.6]      | 17.9 [17.4-27.6]      |
//! | 64 slots: missing page, dedicated         |          | 17.3 [15.5-20.1]      | 9.6 [9.4-14.0]        |
//!
//! The dedicated missing-page write met the 10 us target in three of the four new runs (9.3,
//! 9.4, 9.4 us; 15.6 us in the first, at load 3.5), never in the old ones. The live-hol ratio
//! rose because its denominator fell: the other transfers without any fault took 17x less
//! time (a 256 KiB transfer's 16 packets no longer walk 8 MiB of cold slots), and with the
//! faulting transfer they took 4.5x less (588 against 2659 us), but the page-in's CPU on two
//! shared cores (see "Latency follow-up 2") is now most of their time. Earlier sets, load
//! 4.4-7: the dedicated write 32.7 -> 19.0 us (ring alone, four pairs) and 46.7 -> 19.4 us
//! (ring and probe, four pairs at load ~6.5); 8 B and bandwidth within the noise in both.
//!
//! Later, on a quieter machine (load average 2.0 falling to 1.0), ten more interleaved pairs
//! (the same two binaries; medians [range]):
//!
//! | what                                      | target   | old, 10 runs          | new, 10 runs          |
//! |-------------------------------------------|----------|-----------------------|-----------------------|
//! | 8 B write, defaults                       | <= 0.5   | 4.92 [1.39-8.91]      | 4.58 [1.37-4.65]      |
//! | 8 B write, dedicated cores                | <= 0.5   | 0.86 [0.83-1.54]      | 1.04 [0.84-1.32]      |
//! | 4 MiB write bandwidth, GB/s               | >= 20    | 8.44 [5.78-9.30]      | 8.25 [5.41-10.05]     |
//! | 4 KiB into a missing page, defaults       | <= 10    | 17.6 [16.6-20.9]      | 17.3 [10.8-18.2]      |
//! | 4 KiB into a missing page, dedicated      | <= 10    | 24.4 [23.8-42.0]      | 10.4 [9.2-15.2]       |
//! | live-hol others, no fault, us             |          | 553 [527-809]         | 117 [77-167]          |
//! | live-hol others PART / no-fault           | <= 1.2x  | 1.94 [1.26-2.50]      | 4.48 [3.82-7.07]      |
//!
//! The dedicated 8 B line was 0.15-0.2 us slower in these runs (and in four more pairs at
//! load ~2.5: 0.94 against 1.22 us; five more at load ~2: 1.24 against 1.42 us), not in the
//! set above (1.34 against 0.83 us); with
//! `examples/trace_write.rs` (dedicated, 2000 writes, three interleaved runs of each binary
//! at load ~0.9) it measured 0.85-0.93 us old, 0.87-0.92 us with the new ring alone and
//! 0.88-1.02 us with the ring and the probe: an 8 B write's packets take the same two lines
//! of the descriptor that they took of a slot, so no cause is known; it may be noise at this
//! scale, or not. The same trace runs put the missing-page write (traced) at 25.6-28.7 us
//! old, 13.2-13.5 us with the new ring alone, 9.7-10.1 us with both changes.
//!
//! Medium writes on fresh rings gained most: `unpinned live live-residency --set
//! exp.sizes=65536,262144 --set exp.rounds=2 --set exp.block=2` (one run each at load ~1.5)
//! measured PART 64 KiB writes at 90.2 us old against 13.7 us new, 256 KiB at 367 against
//! 45 us: the old ring walked fresh 16 KiB slots, each packet taking first-touch faults of
//! shared-memory pages besides cold lines, while the new one keeps reusing the same few
//! slots. (Its test asserted one target scan per write under the 20 us TTL rule; writes now
//! follow each other faster than that and share verdicts, so it asserts some scans.)
//!
//! Where the dedicated write's time goes now (`examples/trace_write.rs`, traced 16.6 us at
//! load ~4.3): the sender's post until the packet is in the ring 2.9 us (the source's verdict
//! has expired between writes: a probe bounded to the 4 KiB buffer, then the copy into a warm
//! slot), hop 0.35, the target's check and NACK 3.3 us (the check alone is 1.37 us in one
//! thread, `examples/miss_check.rs`, against 3.3 us for the old 256 KiB scan and `mincore`;
//! on the progress thread, right after the caller's `mmap` on the other CPU, the system
//! calls take longer), the inline page-in 4.7 us (`MADV_POPULATE_WRITE` of the page alone:
//! 3.0 us median at load ~5, 2.5 us on a quiet machine), NACK and ERR out together 0.4, the
//! retransmission in the ring 0.75 us after the ERR (no scan, no timer: the source verdict is
//! still valid), hop 0.25, the write 1.1, ACK 0.4, hop 0.3. Through the old ring the same
//! trace took 30.6 us (the copies into and out of cold slots: sender 7.6, target 4.9 and 3.6).
//! With the defaults (traced 18.4 us at load 2.6) the path's own work is ~8 us and the four
//! hops take 2-2.6 us each (both threads on one core, two involuntary context switches per
//! write): the idle policy's part, not this path's. What is left on the path: two system
//! calls of the residency check (sender and target, ~1.3 us each at best), the page-in
//! (2.5-3 us at best) and the four hops; the 10 us target holds when the two threads have a
//! core each.

use std::time::Instant;

use serde::Serialize;
use unpinned_experiments::{ExperimentError, RunContext};
use unpinned_live::fault_handler::HandlerConfig;
use unpinned_live::MemoryMode;
use unpinned_os::mapping::Mapping;

use crate::exp::hol::{hol, HolParams};
use crate::exp::{fail, median, pattern, present, Pair};
use crate::schemes::mlock_range;

/// What `unpinned bench live` measured.
#[derive(Clone, Debug, Serialize)]
pub struct LiveBench {
    /// 8 B write into present memory, post to completion, median, us (target <= 0.5).
    pub write_8b_us: f64,
    /// 4 MiB write into present memory, median, GB/s (target >= 20).
    pub write_4mib_gbytes_s: f64,
    /// This machine's bound: one `memcpy` of 4 MiB between present buffers, median, GB/s.
    pub memcpy_4mib_gbytes_s: f64,
    /// This machine's bound for a two-copy path: 4 MiB copied source -> 2 MiB ring of 16 KiB
    /// slots -> destination by two spinning threads in parallel, median, GB/s.
    pub pipelined_copy_4mib_gbytes_s: f64,
    /// One-way hand-off of an 8 B packet through the shared-memory ring between two spinning
    /// threads (half a ping-pong), median of rounds, us: the floor of a write's two hops.
    pub ring_one_way_us: f64,
    /// Pin per transfer (mlock + Transfer-Only transfer + munlock) over PART, 4 MiB present
    /// (target >= 3).
    pub pin_over_part_4mib: f64,
    /// PART over Transfer-Only latency, per size >= 64 KiB (target <= 1.05).
    pub part_over_transfer_only: Vec<(u64, f64)>,
    /// Residency checks of one 4 MiB PART write: `PAGEMAP_SCAN` calls and pagemap `pread`s on
    /// the busier side (sender or target), mean over 5 writes.
    pub checks_per_4mib_write: f64,
    /// One `PAGEMAP_SCAN` of [`unpinned_live::memory::SCAN_AHEAD_BYTES`] of present memory,
    /// median, us.
    pub scan_us: f64,
    /// Those checks' time over the 4 MiB write's time: the deterministic part of the check's
    /// cost, read apart from the Transfer-Only comparison, which this machine's load makes vary
    /// by tens of percent between runs (target <= 0.05).
    pub check_cost_4mib_fraction: f64,
    /// 4 KiB write whose destination page is missing, the spec's path (page-fault NACK,
    /// page-in, ERR, retransmission), median, us (target <= 10).
    pub write_4k_missing_us: f64,
    /// Of that: the target's page-in of the missing page (`MADV_POPULATE_WRITE` after the
    /// NACK), mean, us. The rest is two round trips (data -> page-fault NACK and ERR,
    /// retransmission -> ACK), each about one 8 B write.
    pub missing_page_in_us: f64,
    /// The same write with the opt-in page-in on access ([`FILL_OPT_IN_PAGES`]: the target
    /// pages in before writing, no NACK, one round trip), median, us.
    pub write_4k_missing_fill_us: f64,
    /// Page-fault NACKs the target sent during those writes (0: paged in on access).
    pub missing_nacks: u64,
    /// live-hol: median latency of the other transfers, PART over no-fault (target <= 1.2).
    pub hol_part_over_nofault: f64,
    /// live-hol: the same for the blocking engine (expected > 1.2).
    pub hol_blocking_over_nofault: f64,
    /// live-hol: the other transfers' median latency without the faulting one, us.
    pub hol_nofault_us: f64,
    /// The dedicated-core configuration ([`DedicatedCores`]), if this machine has two CPUs
    /// for it: 8 B write and missing-page write measured the same way as above.
    pub dedicated: Option<DedicatedCores>,
    /// Slots per shared-memory ring of the measurements above (`transport.ring_slots`,
    /// default 512 as `unpinned run`).
    pub ring_slots: u32,
    /// The latency lines again over rings of [`SMALL_RING_SLOTS`] slots.
    pub small_ring: SmallRing,
    /// Repetitions used for the large transfers.
    pub reps: usize,
}

/// The 8 B and missing-page writes measured in the dedicated-core configuration that HPC
/// runs use: the posting caller pinned to one CPU and spinning while it waits, the target's
/// progress thread pinned to another and spinning after its work (the sender's progress thread
/// shares the caller's CPU, asleep while the caller drives). Spinning needs a core per spinning
/// thread: unpinned, on this 2-vCPU VM shared with other jobs, the same spin gave 1.7 us or
/// ~110 us from run to run (the two spinners landed on one core), so the runtime's default is
/// not to spin.
#[derive(Clone, Debug, Serialize)]
pub struct DedicatedCores {
    /// Slots per shared-memory ring.
    pub ring_slots: u32,
    /// CPU of the caller (and of the sender's progress thread).
    pub caller_cpu: usize,
    /// CPU of the target's progress thread.
    pub target_cpu: usize,
    /// Spin of the waiting caller and of the target's progress thread, us.
    pub spin_us: u64,
    /// 8 B write, post to completion, median, us.
    pub write_8b_us: f64,
    /// 4 KiB write into a missing page (the spec's NACK path), median, us.
    pub write_4k_missing_us: f64,
}

/// Spin of the dedicated-core configuration, us.
pub const DEDICATED_SPIN_US: u64 = 200;

/// Measure [`DedicatedCores`] on the last two CPUs this process may use; `None` with fewer
/// than two. The calling thread is pinned during the measurement and unpinned afterwards.
pub fn dedicated_cores(
    ctx: &RunContext,
    reps: usize,
    ring_slots: u32,
) -> Result<Option<DedicatedCores>, ExperimentError> {
    let cpus = unpinned_os::affinity::allowed_cpus().map_err(fail)?;
    let [.., caller_cpu, target_cpu] = cpus[..] else {
        return Ok(None);
    };
    let pair = Pair::with_ring(
        &ctx.profile,
        MemoryMode::Part,
        HandlerConfig::default(),
        0,
        ring_slots,
        |r, c| {
            if r == 0 {
                c.progress.cpu = Some(caller_cpu);
                c.progress.wait_spin_us = DEDICATED_SPIN_US;
            } else {
                c.progress.cpu = Some(target_cpu);
                c.progress.spin_us = DEDICATED_SPIN_US;
            }
        },
    )?;
    unpinned_os::affinity::pin_current_thread(&[caller_cpu]).map_err(fail)?;
    let measured = latency_pair(&pair, reps);
    let unpinned = unpinned_os::affinity::pin_current_thread(&cpus).map_err(fail);
    let (write_8b_us, write_4k_missing_us) = measured?;
    unpinned?;
    Ok(Some(DedicatedCores {
        ring_slots,
        caller_cpu,
        target_cpu,
        spin_us: DEDICATED_SPIN_US,
        write_8b_us,
        write_4k_missing_us,
    }))
}

/// Median bandwidth of copying `len` bytes between two present buffers, GB/s (the memory
/// copy bound of this machine; the live path copies every byte at least twice).
pub fn memcpy_gbytes_s(len: usize, reps: usize) -> Result<f64, ExperimentError> {
    let src = present(len)?;
    let dst = present(len)?;
    let v = (0..reps.max(3))
        .map(|_| {
            let t = Instant::now();
            // SAFETY: two distinct fresh mappings of `len` bytes each, owned here.
            unsafe { std::ptr::copy_nonoverlapping(src.ptr(), dst.ptr(), len) };
            std::hint::black_box(dst.ptr());
            len as f64 / t.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    Ok(median(v))
}

/// Median bandwidth of moving `len` bytes through a ring of `slots` slots of `slot` bytes
/// with two copies on two threads at the same time (the producer copies chunk k+1 in while the
/// consumer copies chunk k out), both polling; GB/s. The bound of any two-copy path between
/// processes on this machine, with nothing else in it (no headers, checks or bookkeeping).
/// A waiting side yields the core after [`SPINS_BEFORE_YIELD`] polls: when the machine's other
/// load leaves both threads one core, pure spinning measured 0.2 GB/s (each hand-off waited for
/// the end of a time slice), a bound of the scheduler rather than of the copies.
pub fn pipelined_copy_gbytes_s(
    len: usize,
    slot: usize,
    slots: usize,
    reps: usize,
) -> Result<f64, ExperimentError> {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    let src = present(len)?;
    let dst = present(len)?;
    let ring = present(slot * slots)?;
    let chunks = len.div_ceil(slot) as u64;
    let head = AtomicU64::new(0);
    let tail = AtomicU64::new(0);
    let rounds = AtomicUsize::new(0);
    let reps = reps.max(3);
    let (sp, dp, rp) = (
        src.addr() as usize,
        dst.addr() as usize,
        ring.addr() as usize,
    );
    let v = std::thread::scope(|sc| {
        sc.spawn(|| {
            for r in 0..reps {
                poll_until(|| rounds.load(Ordering::Acquire) > r);
                for c in 0..chunks {
                    let t = tail.load(Ordering::Relaxed);
                    poll_until(|| head.load(Ordering::Acquire) != t);
                    let off = c as usize * slot;
                    let n = slot.min(len - off);
                    // SAFETY: the slot was published by the producer (head acquired) and is
                    // not rewritten before our release of tail; dst is ours, in bounds.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            (rp + (t % slots as u64) as usize * slot) as *const u8,
                            (dp + off) as *mut u8,
                            n,
                        )
                    };
                    tail.store(t + 1, Ordering::Release);
                }
            }
        });
        let mut v = Vec::with_capacity(reps);
        for r in 0..reps {
            let t0 = Instant::now();
            rounds.store(r + 1, Ordering::Release);
            for c in 0..chunks {
                let h = head.load(Ordering::Relaxed);
                poll_until(|| h - tail.load(Ordering::Acquire) < slots as u64);
                let off = c as usize * slot;
                let n = slot.min(len - off);
                // SAFETY: the consumer released this slot (tail acquired); src is ours.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        (sp + off) as *const u8,
                        (rp + (h % slots as u64) as usize * slot) as *mut u8,
                        n,
                    )
                };
                head.store(h + 1, Ordering::Release);
            }
            poll_until(|| tail.load(Ordering::Acquire) == head.load(Ordering::Relaxed));
            v.push(len as f64 / t0.elapsed().as_secs_f64() / 1e9);
        }
        v
    });
    Ok(median(v))
}

/// Median time of one `PAGEMAP_SCAN` over [`unpinned_live::memory::SCAN_AHEAD_BYTES`] of
/// present memory, us (NaN without `PAGEMAP_SCAN` on this kernel).
pub fn scan_cost_us(rounds: usize) -> Result<f64, ExperimentError> {
    let len = unpinned_live::memory::SCAN_AHEAD_BYTES;
    let m = present(len as usize)?;
    let pm = std::fs::File::open("/proc/self/pagemap").map_err(fail)?;
    let mut v = Vec::with_capacity(rounds);
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        let r = unpinned_os::scan::good_prefix(
            &pm,
            m.addr(),
            m.addr() + len,
            unpinned_os::scan::Need::Write,
        );
        v.push(t.elapsed().as_secs_f64() * 1e6);
        if r.is_none() {
            return Ok(f64::NAN);
        }
    }
    Ok(median(v))
}

/// Polls a waiting side of [`pipelined_copy_gbytes_s`] makes before it yields the core.
pub const SPINS_BEFORE_YIELD: u32 = 4096;

fn poll_until(mut ready: impl FnMut() -> bool) {
    let mut n = 0u32;
    while !ready() {
        n += 1;
        if n < SPINS_BEFORE_YIELD {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// Median one-way time of an 8 B packet through the shared-memory transport between two
/// spinning threads (ping-pong of `rounds`, halved), us.
pub fn ring_one_way_us(rounds: usize) -> Result<f64, ExperimentError> {
    use unpinned_live::transport::shm::{create_segment, ShmGeometry, ShmTransport};
    use unpinned_live::transport::Transport;
    let path = std::path::PathBuf::from(format!(
        "/dev/shm/unpinned-bench-ring-{}",
        std::process::id()
    ));
    create_segment(&path, ShmGeometry::new(2, 64, 64)).map_err(fail)?;
    let a = ShmTransport::open(&path, 0);
    let b = ShmTransport::open(&path, 1);
    let _ = std::fs::remove_file(&path);
    let (mut a, mut b) = (a.map_err(fail)?, b.map_err(fail)?);
    let rounds = rounds.max(10);
    let v = std::thread::scope(|sc| {
        sc.spawn(move || {
            let mut buf = [0u8; 64];
            for _ in 0..rounds {
                while b.recv(&mut buf).is_none() {
                    std::hint::spin_loop();
                }
                while b.send(0, &buf[..8]).is_err() {
                    std::hint::spin_loop();
                }
            }
        });
        let mut buf = [0u8; 64];
        let mut v = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let t = Instant::now();
            while a.send(1, &buf[..8]).is_err() {
                std::hint::spin_loop();
            }
            while a.recv(&mut buf).is_none() {
                std::hint::spin_loop();
            }
            v.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
        }
        v
    });
    Ok(median(v))
}

fn writes(
    pair: &Pair,
    src: &[u8],
    dst: &Mapping,
    key: u32,
    n: usize,
) -> Result<Vec<f64>, ExperimentError> {
    (0..n)
        .map(|_| pair.write_us(src, dst.addr(), key))
        .collect()
}

/// Slots per ring of the small-ring measurements ([`SmallRing`]).
pub const SMALL_RING_SLOTS: u32 = 64;

/// The latency lines measured again over rings of [`SMALL_RING_SLOTS`] payload slots instead
/// of the launcher's 512, everything else the defaults. When every packet took a whole 16 KiB
/// slot and a ring was walked slot after slot, a 512-slot ring (8 MiB per direction) brought a
/// slot back into use only 512 packets later, its lines long gone from both cores' caches
/// (1 MiB L2 each here): a 4 KiB packet's copy into its slot took 4-7 us and the copy out of
/// it 2.5 us, against 0.2 us each through a 16-slot ring (`examples/trace_write.rs`). Since
/// layout version 3 of the shm segment (descriptors, small packets inline, payload slots
/// reused most recently freed first: `unpinned_live::transport::shm`) the slot count should
/// no longer matter for latency; this line checks that it does not.
#[derive(Clone, Debug, Serialize)]
pub struct SmallRing {
    /// Slots per ring.
    pub ring_slots: u32,
    /// 8 B write, post to completion, median, us.
    pub write_8b_us: f64,
    /// 4 KiB write into a missing page (the spec's NACK path), median, us.
    pub write_4k_missing_us: f64,
    /// live-hol: median latency of the other transfers, PART over no-fault.
    pub hol_part_over_nofault: f64,
    /// live-hol: the same for the blocking engine.
    pub hol_blocking_over_nofault: f64,
    /// live-hol: the other transfers' median latency without the faulting one, us.
    pub hol_nofault_us: f64,
    /// The dedicated-core configuration over the same rings.
    pub dedicated: Option<DedicatedCores>,
}

/// 8 B writes into present memory and 4 KiB writes into fresh (missing) anonymous pages:
/// (8 B median, missing-page median), us.
fn latency_pair(pair: &Pair, reps: usize) -> Result<(f64, f64), ExperimentError> {
    let dst = present(4096)?;
    // SAFETY: `dst` outlives the exposure (revoked below, before `dst` is dropped).
    let k = unsafe { pair.expose(dst.ptr(), 4096)? };
    let src8 = pattern(8, 8);
    writes(pair, &src8, &dst, k, 100)?;
    let w8 = median(writes(pair, &src8, &dst, k, 2000)?);
    pair.revoke(k);
    let src4 = pattern(4, 4096);
    let mut miss = Vec::new();
    for _ in 0..(20 * reps) {
        let fresh = Mapping::anon(4096).map_err(fail)?;
        // SAFETY: `fresh` outlives the exposure (revoked below).
        let k = unsafe { pair.expose(fresh.ptr(), 4096) }?;
        miss.push(pair.write_us(&src4, fresh.addr(), k)?);
        pair.revoke(k);
    }
    Ok((w8, median(miss)))
}

/// live-hol's other transfers: (PART / no-fault, blocking / no-fault, no-fault median us).
fn hol_ratios(ctx: &RunContext, hp: HolParams) -> Result<(f64, f64, f64), ExperimentError> {
    let others = |v: Vec<(String, f64)>| {
        median(
            v.into_iter()
                .filter(|(n, _)| n != "faulting")
                .map(|(_, l)| l)
                .collect(),
        )
    };
    let nf = others(hol(ctx, "no-fault", hp)?);
    let p = others(hol(ctx, "part", hp)?);
    let b = others(hol(ctx, "blocking", hp)?);
    Ok((p / nf, b / nf, nf))
}

/// Page-in on access limit (pages) for the opt-in measurement of the missing-page write.
pub const FILL_OPT_IN_PAGES: u64 = 4;

/// Run every measurement; `progress` gets one line per step.
pub fn run(
    ctx: &RunContext,
    reps: usize,
    mut progress: impl FnMut(&str),
) -> Result<LiveBench, ExperimentError> {
    let reps = reps.max(1);
    let big = 4usize << 20;
    progress("memcpy bound");
    let memcpy_4mib_gbytes_s = memcpy_gbytes_s(big, 20 * reps)?;
    progress("pipelined two-copy bound, ring hand-off");
    let pipelined_copy_4mib_gbytes_s = pipelined_copy_gbytes_s(big, 16 << 10, 128, 10 * reps)?;
    let ring_one_way_us = ring_one_way_us(10_000)?;
    // Declared before the pairs so that it outlives them on every path.
    let dst = present(big)?;
    // The runtime's defaults: every missing page takes the spec's path (NACK, page-in, ERR).
    let part = Pair::new(&ctx.profile, MemoryMode::Part, HandlerConfig::default())?;
    let to = Pair::new(
        &ctx.profile,
        MemoryMode::TransferOnly,
        HandlerConfig::default(),
    )?;
    // SAFETY: `dst` outlives both pairs and is never read while transfers run.
    let (kp, kt) = unsafe { (part.expose(dst.ptr(), big)?, to.expose(dst.ptr(), big)?) };

    progress("8 B write latency");
    let src8 = pattern(8, 8);
    writes(&part, &src8, &dst, kp, 100)?;
    let write_8b_us = median(writes(&part, &src8, &dst, kp, 2000)?);

    progress("PART vs Transfer-Only vs pin per transfer (present memory)");
    let sizes = [64u64 << 10, 256 << 10, 1 << 20, 4 << 20];
    let mut p_lat: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    let mut t_lat: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    let mut pin_4m = Vec::new();
    // Alternate blocks of each engine so that drift of the machine hits both alike.
    for rep in 0..reps {
        for (i, &s) in sizes.iter().enumerate() {
            let src = pattern(s, s as usize);
            let n = if s >= 1 << 20 { 3 } else { 10 };
            // Each engine in turn, the first one alternating between rounds (whichever ran
            // second was measured ~1.3x faster at every size in one order).
            for k in 0..2 {
                // Let the other pair's engines fall asleep (they yield for 1 ms after work),
                // so that each engine is measured alone.
                std::thread::sleep(std::time::Duration::from_millis(3));
                if (k + rep) % 2 == 0 {
                    writes(&part, &src, &dst, kp, 1)?;
                    p_lat[i].extend(writes(&part, &src, &dst, kp, n)?);
                } else {
                    writes(&to, &src, &dst, kt, 1)?;
                    t_lat[i].extend(writes(&to, &src, &dst, kt, n)?);
                }
            }
            if s == 4 << 20 {
                for _ in 0..n {
                    let t = Instant::now();
                    mlock_range(dst.ptr(), big, true).map_err(fail)?;
                    to.write_us(&src, dst.addr(), kt)?;
                    mlock_range(dst.ptr(), big, false).map_err(fail)?;
                    pin_4m.push(t.elapsed().as_secs_f64() * 1e6);
                }
            }
        }
    }
    let p4 = median(p_lat[3].clone());
    let (a0, b0) = part.stats()?;
    let src4m = pattern(3, big);
    std::thread::sleep(std::time::Duration::from_millis(3));
    for _ in 0..5 {
        part.write_us(&src4m, dst.addr(), kp)?;
    }
    let (a1, b1) = part.stats()?;
    let side = |x: &unpinned_live::RuntimeStats, y: &unpinned_live::RuntimeStats| {
        (y.memory.range_scans - x.memory.range_scans + y.memory.pagemap_reads
            - x.memory.pagemap_reads) as f64
            / 5.0
    };
    let checks_per_4mib_write = side(&a0, &a1).max(side(&b0, &b1));
    let scan_us = scan_cost_us(1000)?;
    let check_cost_4mib_fraction = checks_per_4mib_write * scan_us / p4;
    let write_4mib_gbytes_s = big as f64 / (p4 * 1e-6) / 1e9;
    let pin_over_part_4mib = median(pin_4m) / p4;
    let part_over_transfer_only = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| (s, median(p_lat[i].clone()) / median(t_lat[i].clone())))
        .collect();
    drop(to);

    progress("4 KiB write into a missing page");
    let src4 = pattern(4, 4096);
    let mut miss = Vec::new();
    let s0 = part.stats()?.1;
    for _ in 0..(20 * reps) {
        let fresh = Mapping::anon(4096).map_err(fail)?;
        // SAFETY: `fresh` outlives the exposure (revoked below).
        let k = unsafe { part.expose(fresh.ptr(), 4096) }?;
        miss.push(part.write_us(&src4, fresh.addr(), k)?);
        part.revoke(k);
    }
    let write_4k_missing_us = median(miss);
    let s1 = part.stats()?.1;
    // Paged in inline after the NACK, or by the page-in thread.
    let page_in_ns = s1.handler.page_in_ns - s0.handler.page_in_ns;
    let missing_page_in_us = page_in_ns as f64 / 1e3 / (20 * reps) as f64;
    let missing_nacks = s1.engine.nacks_fault_sent - s0.engine.nacks_fault_sent;
    // The opt-in policy for the same fault: page-in on access before the write, no NACK.
    let fill_pair = Pair::with_fill(
        &ctx.profile,
        MemoryMode::Part,
        HandlerConfig::default(),
        FILL_OPT_IN_PAGES,
    )?;
    let mut miss_fill = Vec::new();
    for _ in 0..(20 * reps) {
        let fresh = Mapping::anon(4096).map_err(fail)?;
        // SAFETY: `fresh` outlives the exposure (revoked below).
        let k = unsafe { fill_pair.expose(fresh.ptr(), 4096) }?;
        miss_fill.push(fill_pair.write_us(&src4, fresh.addr(), k)?);
        fill_pair.revoke(k);
    }
    drop(fill_pair);
    let write_4k_missing_fill_us = median(miss_fill);
    drop(part);

    let ring_slots = crate::exp::ring_slots();
    progress("dedicated cores: 8 B and missing-page writes, pinned and spinning");
    let dedicated = dedicated_cores(ctx, reps, ring_slots)?;

    progress("live-hol");
    let hp = HolParams {
        others: 3,
        other_bytes: 256 << 10,
        fault_bytes: 1 << 20,
        reps,
        anon_fault: false,
        ring_slots,
        debug: false,
    };
    let (hol_part_over_nofault, hol_blocking_over_nofault, hol_nofault_us) = hol_ratios(ctx, hp)?;

    progress("small rings: 8 B, missing page, live-hol");
    let small = Pair::with_ring(
        &ctx.profile,
        MemoryMode::Part,
        HandlerConfig::default(),
        crate::exp::base_fill_pages(),
        SMALL_RING_SLOTS,
        |_, _| {},
    )?;
    let (s8, smiss) = latency_pair(&small, reps)?;
    drop(small);
    let sdedicated = dedicated_cores(ctx, reps, SMALL_RING_SLOTS)?;
    let (sp, sb, snf) = hol_ratios(
        ctx,
        HolParams {
            ring_slots: SMALL_RING_SLOTS,
            ..hp
        },
    )?;
    let small_ring = SmallRing {
        ring_slots: SMALL_RING_SLOTS,
        write_8b_us: s8,
        write_4k_missing_us: smiss,
        hol_part_over_nofault: sp,
        hol_blocking_over_nofault: sb,
        hol_nofault_us: snf,
        dedicated: sdedicated,
    };
    Ok(LiveBench {
        write_8b_us,
        write_4mib_gbytes_s,
        memcpy_4mib_gbytes_s,
        pipelined_copy_4mib_gbytes_s,
        ring_one_way_us,
        pin_over_part_4mib,
        part_over_transfer_only,
        checks_per_4mib_write,
        scan_us,
        check_cost_4mib_fraction,
        write_4k_missing_us,
        missing_page_in_us,
        missing_nacks,
        write_4k_missing_fill_us,
        hol_part_over_nofault,
        hol_blocking_over_nofault,
        hol_nofault_us,
        dedicated,
        ring_slots,
        small_ring,
        reps,
    })
}
