//! The non-governor component kinds: the one table of them, and the typed identity of a
//! component a parameter belongs to.
//!
//! The governor kinds have their own table (`kinds.rs`, `with_governor_kinds!`); every
//! other kind a scenario declares — traffic (classes, sources, the user population and its
//! segments), call sites, upstreams (stations, quotas, GPU servers, connection pools), the
//! entry path (apps, dispatchers, worker pools, their queues' waits), host stalls and
//! stations' autoscalers — is a
//! variant of [`ComponentKind`] with its registry name and the scenario list it is declared
//! in. The parameter catalogue (`reference.rs`) gives each variant its declaration type.
//!
//! Architecture invariant: a registered parameter carries its [`Owner`], typed when the
//! registry is built (`ScenarioSpec::registry`): a component's kind and its place in the
//! scenario's lists, or a declared governor's arena index. Everything that acts on a
//! parameter by path — sweeps (`ScenarioSpec::set_param`), run-time changes (the world's
//! `set`), validation — dispatches on the owner, never on the path's text.
//!
//! API boundary: plain data; this module names no other module of the crate.

/// Declares [`ComponentKind`] and its `ALL` from one list of variants (so a variant cannot
/// be left out of `ALL`).
macro_rules! component_kinds {
    ($($variant:ident),* $(,)?) => {
        /// A non-governor component kind. The order is the parameter reference's order
        /// within each group (traffic, site, upstream, then — after the governors — entry).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum ComponentKind {
            $($variant),*
        }

        impl ComponentKind {
            /// Every kind, in table order.
            pub const ALL: &'static [ComponentKind] = &[$(ComponentKind::$variant),*];
        }
    };
}

component_kinds!(
    Class,
    Source,
    Users,
    Segment,
    CallSite,
    Station,
    Quota,
    GpuServer,
    ConnPool,
    App,
    Dispatcher,
    Pool,
    DispatcherQueue,
    PoolQueue,
    Stall,
    Autoscaler,
    GpuPool,
);

/// One row of the table: what is written once per kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindRow {
    /// The registry kind, the first segment of its parameter paths (`station`).
    pub name: &'static str,
    /// Where the scenario declares it (`stations`, `apps[].dispatcher`).
    pub list: &'static str,
    /// Its family, for grouping knobs and docs: `traffic`, `site`, `upstream`, `entry`.
    pub group: &'static str,
    /// How the instance segment of its paths is written in docs.
    pub instance: &'static str,
}

impl ComponentKind {
    /// The kind's row (the parameter catalogue checks `name` against its declaration's
    /// `Params::KIND`).
    pub const fn row(self) -> KindRow {
        use ComponentKind::*;
        let (name, list, group, instance) = match self {
            Class => ("class", "classes", "traffic", "<name>"),
            Source => ("source", "sources", "traffic", "<name>"),
            Users => ("users", "users", "traffic", "all"),
            Segment => ("segment", "users.segments", "traffic", "<name>"),
            CallSite => ("call_site", "call_sites", "site", "<name>"),
            Station => ("station", "stations", "upstream", "<name>"),
            Quota => ("quota", "quotas", "upstream", "<name>"),
            GpuServer => ("gpu_server", "gpu_servers", "upstream", "<name>"),
            ConnPool => ("connpool", "connection_pools", "upstream", "<name>"),
            App => ("app", "apps", "entry", "<name>"),
            Dispatcher => ("dispatcher", "apps[].dispatcher", "entry", "<name>"),
            Pool => ("pool", "apps[].pool", "entry", "<name>"),
            DispatcherQueue => {
                ("dispatcher_queue", "apps[].dispatcher.queues", "entry", "<dispatcher>-<class>")
            }
            PoolQueue => ("pool_queue", "apps[].pool", "entry", "<pool>"),
            Stall => ("stall", "stalls", "entry", "<name>"),
            Autoscaler => ("autoscaler", "autoscalers", "upstream", "<name>"),
            GpuPool => ("gpu_pool", "gpu_pools", "upstream", "<name>"),
        };
        KindRow { name, list, group, instance }
    }

    /// The registry kind (`station`).
    pub const fn name(self) -> &'static str {
        self.row().name
    }

    /// Is it a part of an app (the entry path: one app's app, dispatcher, pools, queues)?
    pub const fn is_entry_part(self) -> bool {
        matches!(
            self,
            ComponentKind::App
                | ComponentKind::Dispatcher
                | ComponentKind::Pool
                | ComponentKind::DispatcherQueue
                | ComponentKind::PoolQueue
        )
    }
}

/// One component: its kind and its place in the scenario, typed once at registration.
///
/// `index` is the position in the kind's scenario list (for the parts of an app: the app's
/// position in `apps`); `part` is the position within the app (a pool in its pool layout,
/// a class queue in its dispatcher's `queues`), 0 for everything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentId {
    pub kind: ComponentKind,
    pub index: u16,
    pub part: u16,
}

impl ComponentId {
    /// A component of a flat list.
    pub fn at(kind: ComponentKind, index: usize) -> Self {
        ComponentId { kind, index: index as u16, part: 0 }
    }
    /// A part of app `app` (its pool, its class queue).
    pub fn part_of(kind: ComponentKind, app: usize, part: usize) -> Self {
        ComponentId { kind, index: app as u16, part: part as u16 }
    }
    pub fn index(self) -> usize {
        self.index as usize
    }
    pub fn part(self) -> usize {
        self.part as usize
    }
}

/// Whom a registered parameter belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    /// A non-governor component.
    Component(ComponentId),
    /// A declared governor, by its arena index: declared governors are numbered kind by
    /// kind in governor-table order, each in declaration order (the same order the world
    /// builds its arena in).
    Governor(usize),
}

impl Owner {
    /// The component's kind (`None`: a governor).
    pub fn component_kind(self) -> Option<ComponentKind> {
        match self {
            Owner::Component(c) => Some(c.kind),
            Owner::Governor(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are distinct: a path's first segment names one kind.
    #[test]
    fn kind_names_are_distinct() {
        let mut names: Vec<&str> = ComponentKind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ComponentKind::ALL.len());
    }
}
