//! PART packets (spec part.md, mechanism 1-7, 11-12).
//!
//! Layout: see the table in the module docs below (written by the implementation).

/// Why a byte string is not a valid PART packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Shorter than its header or than its declared payload.
    #[error("packet truncated: {need} bytes needed, {have} present")]
    Truncated {
        /// Bytes the header says are needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// Unknown magic or version.
    #[error("not a PART packet (bad magic or version)")]
    BadMagic,
    /// Unknown packet type.
    #[error("unknown packet type {0}")]
    UnknownType(u8),
    /// A field holds an impossible value.
    #[error("malformed field {0}")]
    Malformed(&'static str),
    /// The checksum does not match: the packet was corrupted in flight.
    #[error("checksum mismatch")]
    BadChecksum,
    /// The output buffer is too small for `emit`.
    #[error("output buffer too small: {need} bytes needed")]
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
    },
}

/// Flags of a data packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DataFlags {
    /// The data belongs to an RDMA read response (sent by the read's target).
    pub read_response: bool,
}

/// NACK qualifier (part.md, mechanism 3 and 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NackReason {
    /// CRC error: the source retransmits the block at once.
    Crc,
    /// Page fault at the destination: the source waits for the ERR (or its timeout).
    PageFault,
    /// Protection error (range, key, permission, PDID, unmapped): the transfer fails.
    Protection,
}

/// A parsed PART packet. Every variant names its transfer by `(transfer_id, read_response)`;
/// the node ids travel in the link layer (simulator) or transport (live), not here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartRepr<'a> {
    /// A data packet of a block.
    Data {
        /// Protection domain at the receiver.
        pdid: u16,
        /// Key of the exposed range at the receiver (ignored for read responses).
        rkey: u32,
        /// Transfer id (chosen by the operation's initiator).
        transfer_id: u32,
        /// Block index within the transfer.
        block_id: u32,
        /// Attempt number of the block; a retransmission increments it.
        block_seq: u16,
        /// Flags.
        flags: DataFlags,
        /// Byte offset of this packet within the transfer.
        offset: u64,
        /// Bytes in this packet's block (so the receiver knows when the block is complete).
        block_len: u32,
        /// Destination virtual address of byte 0 of the transfer.
        xfer_base: u64,
        /// Length of the whole transfer.
        xfer_len: u64,
        /// The bytes.
        payload: &'a [u8],
    },
    /// A block was received completely.
    Ack {
        /// Transfer id.
        transfer_id: u32,
        /// Block index.
        block_id: u32,
        /// Attempt that completed.
        block_seq: u16,
        /// Transfer is a read response.
        read_response: bool,
    },
    /// A block failed at the receiver.
    Nack {
        /// Transfer id.
        transfer_id: u32,
        /// Block index.
        block_id: u32,
        /// Attempt that failed.
        block_seq: u16,
        /// Transfer is a read response.
        read_response: bool,
        /// Why.
        reason: NackReason,
        /// Faulting address (page fault) or offending address (protection); 0 for CRC.
        addr: u64,
    },
    /// Explicit Retransmission Request: the pages of the block are in, resend it now.
    Err {
        /// Transfer id.
        transfer_id: u32,
        /// Block index.
        block_id: u32,
        /// Attempt that had faulted.
        block_seq: u16,
        /// Transfer is a read response.
        read_response: bool,
    },
    /// RDMA read request: the target writes `len` bytes from `remote_addr` (its memory) back to
    /// `local_addr` at the initiator.
    ReadReq {
        /// Protection domain of the data at the target.
        pdid: u16,
        /// Key of the exposed range at the target.
        rkey: u32,
        /// Transfer id chosen by the initiator; the response data carries it.
        transfer_id: u32,
        /// Protection domain at the initiator where the response lands.
        reply_pdid: u16,
        /// Source address at the target.
        remote_addr: u64,
        /// Destination address at the initiator.
        local_addr: u64,
        /// Length in bytes.
        len: u64,
    },
}

impl<'a> PartRepr<'a> {
    /// Parse and check a packet (length, magic, type, fields, checksum).
    pub fn parse(_bytes: &'a [u8]) -> Result<PartRepr<'a>, WireError> {
        todo!("wire helper")
    }

    /// Bytes `emit` will write.
    pub fn buffer_len(&self) -> usize {
        todo!("wire helper")
    }

    /// Write the packet (with checksum) into `out`; returns the number of bytes written.
    pub fn emit(&self, _out: &mut [u8]) -> Result<usize, WireError> {
        todo!("wire helper")
    }
}

/// Header bytes of a data packet (everything but the payload), for link-time accounting.
pub const DATA_HEADER_LEN: usize = 0; // set by the implementation
