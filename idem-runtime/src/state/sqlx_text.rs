//! `sqlx` `Type`/`Encode`/`Decode` for a derived machine, as text, on every
//! database idem's features enable.
//!
//! The derive cannot see idem's features (a `#[cfg]` in generated code tests
//! the *user's* crate), so it calls `state_sqlx!`, defined here once per
//! feature: with the `postgres` feature off, its PostgreSQL arm expands to
//! nothing. The impls are written against `$crate`, so the user needs no
//! `sqlx` dependency of their own.

/// The impls for one database.
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_state_sqlx_impl {
    ($t:ty, $db:ty) => {
        impl $crate::__private::state::sqlx::Type<$db> for $t {
            fn type_info() -> <$db as $crate::__private::state::sqlx::Database>::TypeInfo {
                <str as $crate::__private::state::sqlx::Type<$db>>::type_info()
            }
            fn compatible(
                ty: &<$db as $crate::__private::state::sqlx::Database>::TypeInfo,
            ) -> bool {
                <str as $crate::__private::state::sqlx::Type<$db>>::compatible(ty)
            }
        }
        impl<'q> $crate::__private::state::sqlx::Encode<'q, $db> for $t {
            fn encode_by_ref(
                &self,
                buf: &mut <$db as $crate::__private::state::sqlx::Database>::ArgumentBuffer,
            ) -> ::core::result::Result<
                $crate::__private::state::sqlx::encode::IsNull,
                $crate::__private::state::sqlx::error::BoxDynError,
            > {
                <&str as $crate::__private::state::sqlx::Encode<'q, $db>>::encode(
                    <$t as $crate::state::StateMachine>::stored(*self),
                    buf,
                )
            }
        }
        impl<'r> $crate::__private::state::sqlx::Decode<'r, $db> for $t {
            fn decode(
                value: <$db as $crate::__private::state::sqlx::Database>::ValueRef<'r>,
            ) -> ::core::result::Result<Self, $crate::__private::state::sqlx::error::BoxDynError>
            {
                let s = <&str as $crate::__private::state::sqlx::Decode<'r, $db>>::decode(value)?;
                $crate::__private::state::decode_state::<$t>(s)
            }
        }
    };
}

/// PostgreSQL arm.
#[cfg(feature = "postgres")]
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_state_sqlx_postgres {
    ($t:ty) => {
        $crate::__idem_state_sqlx_impl!($t, $crate::__private::state::sqlx::Postgres);
    };
}
/// PostgreSQL arm (feature off).
#[cfg(not(feature = "postgres"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_state_sqlx_postgres {
    ($t:ty) => {};
}

/// MySQL arm.
#[cfg(feature = "mysql")]
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_state_sqlx_mysql {
    ($t:ty) => {
        $crate::__idem_state_sqlx_impl!($t, $crate::__private::state::sqlx::MySql);
    };
}
/// MySQL arm (feature off).
#[cfg(not(feature = "mysql"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_state_sqlx_mysql {
    ($t:ty) => {};
}

/// SQLite arm.
#[cfg(feature = "sqlite")]
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_state_sqlx_sqlite {
    ($t:ty) => {
        $crate::__idem_state_sqlx_impl!($t, $crate::__private::state::sqlx::Sqlite);
    };
}
/// SQLite arm (feature off).
#[cfg(not(feature = "sqlite"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_state_sqlx_sqlite {
    ($t:ty) => {};
}

/// Every enabled database: what the derive calls.
#[doc(hidden)]
#[macro_export]
macro_rules! __idem_state_sqlx {
    ($t:ty) => {
        $crate::__idem_state_sqlx_postgres!($t);
        $crate::__idem_state_sqlx_mysql!($t);
        $crate::__idem_state_sqlx_sqlite!($t);
    };
}
