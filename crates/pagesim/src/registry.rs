//! One registry per kind of policy: the closed enum the engine dispatches through, the list
//! of names scenarios use, and the one-line descriptions `pagesim describe` prints, all
//! generated from one list by `registry!`.
//!
//! DOC: a kind of policy (swap-in readahead, get_scan_count balance, file readahead) or of
//! device (timing models) is a trait; each policy is one file implementing it. The kind's
//! module invokes `registry!` once, with the trait methods the engine calls and one line
//! per policy:
//!
//! ```text
//!   Variant => "scenario-name", Type, "description", constructor-expression;
//! ```
//!
//! and gets:
//!
//! * the closed enum, `Variant(Type)` per line (one type may be registered under two names
//!   with two constructors, as `adaptive` and `adaptive-2012` are);
//! * one `#[inline]` method per listed trait method, a `match` over the enum calling the
//!   policy's method, so the hot path stays a jump table without `Box<dyn>`; and `name()`;
//! * a compile-time check that every type implements the trait;
//! * the registry slice of [`Entry`] (name, description, constructor), `find(name)`,
//!   `names()` (for error messages), and a unit test that the names are unique and that `find`
//!   builds the variant registered under each.
//!
//! Adding a policy is its file plus one line. Scenario validation, the CLI, Python and the
//! behaviour tests find it through [`crate::scenario::registries`], the one list of kinds.
//!
//! Device models are configured by the scenario (`[device.NAME] model = "hdd", rpm = ...`).
//! The second form of the macro adds the serde-tagged configuration enum and its methods,
//! takes a constructor from the variant's configuration per line, and generates
//! `Enum::new(&Config) -> Result<Enum, String>`; the registry's `build` gives the model's
//! default configuration (device/mod.rs).
//!
//! The I/O schedulers use a third form that registers names only: a unit enum chosen by serde
//! (device/elevator.rs), because a scheduler is built from its resolved tunables (one
//! sysfs-shaped `iosched` table, device/iosched.rs) rather than from a default. Their
//! operations are a trait too (`ElevatorOps`), dispatched through a closed enum that
//! device/elevator.rs generates from its own one-line-per-scheduler list.
//!
//! One invocation per module: it defines `find`, `names` and a test module there.
//!
//! Method signatures in the macro call are plain Rust with two limits: the receiver is
//! `&self` or `&mut self`, and a generic method has one type parameter with one trait bound,
//! optionally `?Sized` (`fn read_page<C: ?Sized + PageCacheView>(...)`).

/// One registered policy (or device model): the name scenarios use, a line for
/// `pagesim describe`, and how to build it.
#[derive(Debug)]
pub struct Entry<T: 'static> {
    pub name: &'static str,
    pub description: &'static str,
    /// The policy with its initial state; for a kind configured by the scenario (device
    /// models), the default configuration.
    pub build: fn() -> T,
}

/// Generates a kind's closed enum, its dispatch, its registry slice, `find` and `names`; see
/// the [module documentation](self).
///
/// Policies, built from nothing:
///
/// ```ignore
/// registry! {
///     /// The closed set of policies.
///     #[derive(Debug)]
///     pub enum SwapRa: SwapReadahead {
///         fn window(&mut self, ctx: &FaultCtx) -> Window;
///     }
///     /// Every policy, by the name scenarios use.
///     pub const REGISTRY = [
///         None => "none", NoReadahead, "no readahead", NoReadahead;
///         Adaptive => "adaptive", Adaptive, "cluster readahead sized by hits", Adaptive::new();
///     ];
/// }
/// ```
///
/// Models configured by the scenario: a second enum (the configuration, deserialized with the
/// registry name as its serde tag value), its methods, and per line a constructor from the
/// variant's configuration returning `Result<Type, String>`:
///
/// ```ignore
/// registry! {
///     pub enum DeviceModel: TimingModel { fn channels(&self) -> u32; }
///     #[derive(Clone, Debug, Deserialize)]
///     #[serde(tag = "model", deny_unknown_fields)]
///     pub enum DeviceConfig { fn docs(&self) -> Vec<ParamDoc>; }
///     pub const MODELS = [
///         Hdd => "hdd", Hdd, hdd::DESCRIPTION, |p: &HddParams| Hdd::new(p.clone());
///     ];
/// }
/// ```
///
/// Names only (a unit enum the scenario selects through serde):
///
/// ```ignore
/// registry! {
///     #[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
///     pub enum Scheduler;
///     pub const SCHEDULERS = [
///         Fifo => "none", "blk-mq none: dispatch in arrival order";
///     ];
/// }
/// ```
macro_rules! registry {
    // Models configured by the scenario.
    (
        $(#[$meta:meta])*
        $vis:vis enum $Enum:ident $(: $Trait:path)? { $($methods:tt)* }
        $(#[$cmeta:meta])*
        $cvis:vis enum $Config:ident { $($cmethods:tt)* }
        $(#[$rmeta:meta])*
        $rvis:vis const $REGISTRY:ident = [
            $( $V:ident => $name:literal, $Ty:ty, $desc:expr, |$p:ident: &$Cfg:ty| $build:expr; )+
        ];
    ) => {
        $(#[$meta])*
        $vis enum $Enum {
            $( $V($Ty), )+
        }

        $(#[$cmeta])*
        $cvis enum $Config {
            $( #[serde(rename = $name)] $V($Cfg), )+
        }

        impl $Enum {
            /// Builds the model from its configuration, validating it.
            $vis fn new(cfg: &$Config) -> Result<Self, String> {
                match cfg {
                    $( $Config::$V($p) => $build.map($Enum::$V), )+
                }
            }

            $crate::registry::registry!(@methods $Enum [$($V)+] $($methods)*);
            $crate::registry::registry!(@name $vis $Enum [$($V $name)+]);
        }

        impl $Config {
            $crate::registry::registry!(@methods $Config [$($V)+] $($cmethods)*);
            $crate::registry::registry!(@name $cvis $Config [$($V $name)+]);

            /// Where the parameters of a `model = name` table fail to deserialize: the key's
            /// path inside the table and the error. The tagged enum reads the table through a
            /// buffer that forgets the path, so a scenario error names only the table; this
            /// reads it again as the model's parameters to name the key. `None` for an
            /// unknown name or parameters that deserialize.
            $cvis fn locate_error(name: &str, params: toml::Value) -> Option<(String, String)> {
                match name {
                    $( $name => serde_path_to_error::deserialize::<_, $Cfg>(params)
                        .err()
                        .map(|e| (e.path().to_string(), e.into_inner().to_string())), )+
                    _ => None,
                }
            }
        }

        $crate::registry::registry!(@implements $($Trait)? [$($Ty)+]);

        #[cfg(test)]
        mod registry_config_tests {
            /// Each entry's default configuration builds the model registered under its name.
            #[test]
            fn default_configurations_build_their_models() {
                for e in super::$REGISTRY {
                    let model = super::$Enum::new(&(e.build)()).unwrap_or_else(|err| panic!("{}: {err}", e.name));
                    assert_eq!(model.name(), e.name);
                }
            }
        }

        $crate::registry::registry!(
            @registry $(#[$rmeta])* $rvis $REGISTRY $Config
            [$( ($name, $desc, || $Config::$V(<$Cfg as Default>::default())) )+]
        );
    };

    // Policies, built from nothing.
    (
        $(#[$meta:meta])*
        $vis:vis enum $Enum:ident $(: $Trait:path)? { $($methods:tt)* }
        $(#[$rmeta:meta])*
        $rvis:vis const $REGISTRY:ident = [
            $( $V:ident => $name:literal, $Ty:ty, $desc:expr, $build:expr; )+
        ];
    ) => {
        $(#[$meta])*
        $vis enum $Enum {
            $( $V($Ty), )+
        }

        impl $Enum {
            $crate::registry::registry!(@methods $Enum [$($V)+] $($methods)*);
            $crate::registry::registry!(@name $vis $Enum [$($V $name)+]);
        }

        $crate::registry::registry!(@implements $($Trait)? [$($Ty)+]);
        $crate::registry::registry!(
            @registry $(#[$rmeta])* $rvis $REGISTRY $Enum
            [$( ($name, $desc, || $Enum::$V($build)) )+]
        );
    };

    // Names only: unit variants chosen by name through serde, for a kind whose behaviour is
    // not dispatched through one trait (the I/O schedulers, see the module documentation).
    (
        $(#[$meta:meta])*
        $vis:vis enum $Enum:ident;
        $(#[$rmeta:meta])*
        $rvis:vis const $REGISTRY:ident = [
            $( $V:ident => $name:literal, $desc:expr; )+
        ];
    ) => {
        $(#[$meta])*
        $vis enum $Enum {
            $( #[serde(rename = $name)] $V, )+
        }

        impl $Enum {
            /// The name this was registered under (the scenario's value).
            $vis fn name(&self) -> &'static str {
                match self {
                    $( $Enum::$V => $name, )+
                }
            }
        }

        $crate::registry::registry!(
            @registry $(#[$rmeta])* $rvis $REGISTRY $Enum [$( ($name, $desc, || $Enum::$V) )+]
        );
    };

    // One dispatching method per listed signature (tt-munched, so that the variant list, a
    // single token tree here, can be repeated inside each method).
    (@methods $Enum:ident $vs:tt) => {};
    (
        @methods $Enum:ident $vs:tt
        $(#[$mmeta:meta])*
        fn $m:ident $(<$G:ident: $(?$sized:ident +)? $bound:path>)? (&mut self $(, $a:ident: $t:ty)* $(,)?)
            $(-> $ret:ty)?;
        $($rest:tt)*
    ) => {
        $(#[$mmeta])*
        #[inline]
        pub fn $m $(<$G: $(?$sized +)? $bound>)? (&mut self $(, $a: $t)*) $(-> $ret)? {
            $crate::registry::registry!(@match self $Enum $vs $m ($($a),*))
        }
        $crate::registry::registry!(@methods $Enum $vs $($rest)*);
    };
    (
        @methods $Enum:ident $vs:tt
        $(#[$mmeta:meta])*
        fn $m:ident $(<$G:ident: $(?$sized:ident +)? $bound:path>)? (&self $(, $a:ident: $t:ty)* $(,)?)
            $(-> $ret:ty)?;
        $($rest:tt)*
    ) => {
        $(#[$mmeta])*
        #[inline]
        pub fn $m $(<$G: $(?$sized +)? $bound>)? (&self $(, $a: $t)*) $(-> $ret)? {
            $crate::registry::registry!(@match self $Enum $vs $m ($($a),*))
        }
        $crate::registry::registry!(@methods $Enum $vs $($rest)*);
    };
    (@match $self_:ident $Enum:ident [$($V:ident)+] $m:ident $args:tt) => {
        match $self_ {
            $( $Enum::$V(p) => p.$m $args, )+
        }
    };

    (@name $vis:vis $Enum:ident [$($V:ident $name:literal)+]) => {
        /// The name this was registered under (the scenario's value).
        $vis fn name(&self) -> &'static str {
            match self {
                $( $Enum::$V(_) => $name, )+
            }
        }
    };

    // Every type implements the kind's trait. Dispatch uses method-call syntax (which also
    // infers a generic method's parameter), so without this check a type with inherent
    // methods of those names would be accepted without implementing the trait.
    (@implements [$($Ty:ty)+]) => {};
    (@implements $Trait:path [$($Ty:ty)+]) => {
        const _: () = {
            fn implements<T: $Trait>() {}
            #[allow(dead_code)]
            fn every_registered_type() {
                $( implements::<$Ty>(); )+
            }
        };
    };

    (
        @registry $(#[$rmeta:meta])* $rvis:vis $REGISTRY:ident $T:ident
        [$( ($name:literal, $desc:expr, $build:expr) )+]
    ) => {
        $(#[$rmeta])*
        $rvis const $REGISTRY: &[$crate::registry::Entry<$T>] = &[
            $( $crate::registry::Entry { name: $name, description: $desc, build: $build }, )+
        ];

        /// The entry registered under `name`.
        $rvis fn find(name: &str) -> Option<&'static $crate::registry::Entry<$T>> {
            $REGISTRY.iter().find(|e| e.name == name)
        }

        /// Every registered name, in registry order, comma-separated (for error messages).
        $rvis fn names() -> String {
            $REGISTRY.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
        }

        #[cfg(test)]
        mod registry_tests {
            /// Every registry generated by `registry!` gets this test.
            #[test]
            fn names_are_unique_and_find_builds_what_was_registered() {
                let registry = super::$REGISTRY;
                assert!(!registry.is_empty());
                for (i, e) in registry.iter().enumerate() {
                    assert!(!e.name.is_empty() && !e.description.is_empty(), "{}: empty name or description", e.name);
                    assert!(registry[..i].iter().all(|o| o.name != e.name), "{} is registered twice", e.name);
                    let found = super::find(e.name).expect("find() finds every registered name");
                    assert_eq!((found.name, found.description), (e.name, e.description));
                    assert_eq!((e.build)().name(), e.name, "build() makes another variant than {}", e.name);
                }
                let names: Vec<_> = registry.iter().map(|e| e.name).collect();
                assert_eq!(super::names(), names.join(", "));
                assert!(super::find("no-such-name").is_none());
            }
        }
    };
}

pub(crate) use registry;
