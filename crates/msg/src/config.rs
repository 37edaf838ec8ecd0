//! Configuration of the message layer.

/// How messages are carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgConfig {
    /// Largest message sent eagerly (into a receive slot); larger ones use the rendezvous.
    pub eager_max_bytes: u32,
    /// Receive slots per peer (the sender's credits).
    pub slots_per_peer: u32,
}

impl Default for MsgConfig {
    /// 8 KiB eager limit (two pages of payload at most, like the eager limits MPI libraries use
    /// over RDMA), 4 slots per peer.
    fn default() -> Self {
        MsgConfig {
            eager_max_bytes: 8192,
            slots_per_peer: 4,
        }
    }
}

impl MsgConfig {
    /// Check the configuration.
    pub fn validate(&self) -> Result<(), crate::MsgError> {
        if self.slots_per_peer == 0 || self.slots_per_peer > 1 << 16 {
            return Err(crate::MsgError::BadConfig(
                "slots_per_peer must be in 1..=65536",
            ));
        }
        if self.eager_max_bytes > 1 << 24 {
            return Err(crate::MsgError::BadConfig(
                "eager_max_bytes must be at most 16 MiB",
            ));
        }
        Ok(())
    }
}
