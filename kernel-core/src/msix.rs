//! The kernel's pool of MSI-X vectors: which PCI function's table entry
//! each vector serves, whose queue its interrupts go to, and whether one
//! waits for room there (`abi::Call::MsixRoute`, docs/devices.md "MSI-X").
//!
//! Slot `i` of the pool *is* vector `base + i` (the base is the kernel's,
//! arch/apic.rs): a vector is routed to at most one entry, and an entry to
//! at most one vector, so an interrupt names its route without a search
//! and a route names its vector without a table.
//!
//! What it is not: the hardware side (finding and writing the MSI-X table,
//! enabling MSI-X), which is the kernel's arch/pci.rs.
//!
//! Invariants: no two routes have the same (function, entry); `pending` is
//! only ever set on a route that exists; a freed slot is `None` and the
//! first free slot is taken next, so a vector freed is the next one given.

use abi::Pid;

/// One routed entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The PCI function (bus << 8 | device << 3 | function).
    pub function: u16,
    /// The index of the entry in the function's MSI-X table.
    pub entry: u16,
    /// The driver, and the queue its interrupts go to.
    pub owner: Pid,
    pub queue: u32,
    /// An interrupt found the owner's queue full: it is queued as soon as
    /// the owner takes a message from that queue. Edge-triggered messages
    /// are not repeated by the device, so this is the only record of it.
    pub pending: bool,
}

/// Why a route was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolError {
    /// Every vector is routed.
    Exhausted,
}

/// What [`VectorPool::route`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routed {
    /// A free slot was taken: the entry must be written with its vector.
    New(usize),
    /// The entry already had this slot; only its queue changed.
    Moved(usize),
}

impl Routed {
    pub fn slot(self) -> usize {
        match self {
            Routed::New(s) | Routed::Moved(s) => s,
        }
    }
}

pub struct VectorPool<const N: usize> {
    routes: [Option<Route>; N],
}

impl<const N: usize> Default for VectorPool<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> VectorPool<N> {
    pub const fn new() -> Self {
        VectorPool { routes: [None; N] }
    }

    /// The route of slot `slot`, if it has one.
    pub fn get(&self, slot: usize) -> Option<Route> {
        self.routes.get(slot).copied().flatten()
    }

    /// The slot routed to `entry` of `function`.
    pub fn find(&self, function: u16, entry: u16) -> Option<usize> {
        self.routes.iter().position(|r| r.is_some_and(|r| r.function == function && r.entry == entry))
    }

    /// Route `entry` of `function` to `owner`'s `queue`: the slot it
    /// already has (the caller checked it holds the function), else the
    /// first free one.
    pub fn route(&mut self, function: u16, entry: u16, owner: Pid, queue: u32) -> Result<Routed, PoolError> {
        let route = Route { function, entry, owner, queue, pending: false };
        if let Some(slot) = self.find(function, entry) {
            self.routes[slot] = Some(route);
            return Ok(Routed::Moved(slot));
        }
        let slot = self.routes.iter().position(Option::is_none).ok_or(PoolError::Exhausted)?;
        self.routes[slot] = Some(route);
        Ok(Routed::New(slot))
    }

    /// Free `slot`; returns the route it had.
    pub fn release(&mut self, slot: usize) -> Option<Route> {
        self.routes.get_mut(slot)?.take()
    }

    /// Whether any entry of `function` is still routed.
    pub fn has_function(&self, function: u16) -> bool {
        self.routes.iter().flatten().any(|r| r.function == function)
    }

    /// The first slot owned by `owner`, for freeing every route of a
    /// process that ended one by one.
    pub fn first_of(&self, owner: Pid) -> Option<usize> {
        self.routes.iter().position(|r| r.is_some_and(|r| r.owner == owner))
    }

    /// Mark `slot`'s interrupt as waiting for room (no route: nothing).
    pub fn set_pending(&mut self, slot: usize, pending: bool) {
        if let Some(Some(r)) = self.routes.get_mut(slot) {
            r.pending = pending;
        }
    }

    /// The first slot of `owner`'s `queue` with an interrupt waiting.
    pub fn first_pending(&self, owner: Pid, queue: u32) -> Option<usize> {
        self.routes.iter().position(|r| r.is_some_and(|r| r.pending && r.owner == owner && r.queue == queue))
    }

    /// Routed slots.
    pub fn in_use(&self) -> usize {
        self.routes.iter().flatten().count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Pid = Pid(0x101);
    const B: Pid = Pid(0x202);

    #[test]
    fn an_entry_routed_twice_keeps_its_vector() {
        let mut pool = VectorPool::<4>::new();
        assert_eq!(pool.route(8, 0, A, 1), Ok(Routed::New(0)));
        assert_eq!(pool.route(8, 1, A, 1), Ok(Routed::New(1)));
        assert_eq!(pool.route(8, 0, A, 2), Ok(Routed::Moved(0)));
        assert_eq!(pool.get(0).map(|r| r.queue), Some(2));
        assert_eq!(pool.in_use(), 2);
    }

    #[test]
    fn an_exhausted_pool_refuses_and_a_freed_vector_is_given_next() {
        let mut pool = VectorPool::<3>::new();
        for entry in 0..3 {
            assert_eq!(pool.route(8, entry, A, 0), Ok(Routed::New(entry as usize)));
        }
        assert_eq!(pool.route(16, 0, B, 0), Err(PoolError::Exhausted));
        // The refusal changed nothing.
        assert_eq!(pool.in_use(), 3);
        assert_eq!(pool.find(16, 0), None);
        assert_eq!(pool.release(1).map(|r| r.entry), Some(1));
        assert_eq!(pool.route(16, 0, B, 0), Ok(Routed::New(1)));
    }

    #[test]
    fn an_owner_s_routes_are_found_until_all_are_freed() {
        let mut pool = VectorPool::<4>::new();
        pool.route(8, 0, A, 0).unwrap();
        pool.route(16, 0, B, 0).unwrap();
        pool.route(8, 1, A, 0).unwrap();
        let mut freed = 0;
        while let Some(slot) = pool.first_of(A) {
            pool.release(slot);
            freed += 1;
        }
        assert_eq!(freed, 2);
        assert!(!pool.has_function(8));
        assert!(pool.has_function(16));
        assert_eq!(pool.in_use(), 1);
    }

    #[test]
    fn pending_is_per_owner_and_queue_and_cleared_by_a_new_route() {
        let mut pool = VectorPool::<4>::new();
        pool.route(8, 0, A, 3).unwrap();
        pool.route(16, 0, B, 3).unwrap();
        pool.set_pending(1, true);
        assert_eq!(pool.first_pending(A, 3), None);
        assert_eq!(pool.first_pending(B, 2), None);
        assert_eq!(pool.first_pending(B, 3), Some(1));
        pool.route(16, 0, B, 3).unwrap();
        assert_eq!(pool.first_pending(B, 3), None);
        // A slot with no route never becomes pending.
        pool.set_pending(3, true);
        assert_eq!(pool.get(3), None);
    }
}
