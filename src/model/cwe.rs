//! The CWE table: MITRE's Common Weakness Enumeration ids fanscan knows,
//! kept in `configs/cwe.toml` and compiled into the binary.
//!
//! Takes a CWE id as people and models write it (`CWE-89`, `cwe-89`, `89`);
//! gives a [`CweId`], whether the table knows it, its name, and its
//! documented relatives (327 and 328, 22 and 23, 79 and 80 ...), which
//! `fanscan eval` accepts as the same weakness, and its parents in MITRE's
//! research view (787 under 119), which `eval --score castle` accepts. An
//! id the table does not know
//! is still an id: callers keep it and flag it, never drop it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::LazyLock;

use serde::Deserialize;

/// The built-in table's text.
pub(crate) const BUILTIN_CWES: &str = include_str!("../../configs/cwe.toml");

/// A CWE id: the number of `CWE-89`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CweId(u32);

impl CweId {
    /// Parses `CWE-89`, `cwe-89`, `CWE 89`, `CWE_89`, `CWE89` or `89`
    /// (surrounding blanks ignored). Zero, signs, fractions and anything
    /// else are an error naming the text and the form to write.
    pub fn parse(text: &str) -> Result<Self, CweError> {
        let form = || CweError::Form {
            text: text.to_string(),
        };
        let trimmed = text.trim();
        let digits = match trimmed.get(..3) {
            Some(prefix) if prefix.eq_ignore_ascii_case("cwe") => trimmed
                .get(3..)
                .unwrap_or_default()
                .trim_start_matches(['-', '_', ' ', ':']),
            _ => trimmed,
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(form());
        }
        match digits.parse::<u32>() {
            Ok(0) | Err(_) => Err(form()),
            Ok(n) => Ok(Self(n)),
        }
    }

    /// The id from its number; `None` for 0, which no CWE has.
    pub fn from_number(number: u32) -> Option<Self> {
        (number != 0).then_some(Self(number))
    }

    /// The number (89 for `CWE-89`).
    pub fn number(self) -> u32 {
        self.0
    }
}

impl fmt::Display for CweId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CWE-{}", self.0)
    }
}

/// Written as `"CWE-89"`, the form SARIF tags and eval read.
impl serde::Serialize for CweId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Read as `"CWE-89"` in any form [`CweId::parse`] takes, or as the bare
/// number `89`.
impl<'de> serde::Deserialize<'de> for CweId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        let text = match Raw::deserialize(deserializer)? {
            Raw::Number(n) => n.to_string(),
            Raw::Text(t) => t,
        };
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for CweId {
    type Err = CweError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// Why a CWE id or the table could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CweError {
    /// Text that is not a CWE id.
    #[error("{text:?} is not a CWE id: write it as CWE-89 or 89")]
    Form { text: String },
    /// A table that does not parse or contradicts itself.
    #[error("{source_name}: {problem}")]
    Table {
        source_name: String,
        problem: String,
    },
}

/// One entry of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CweEntry {
    pub id: CweId,
    /// MITRE's name.
    pub name: String,
    /// Its rank in the 2024 CWE Top 25, when it is there.
    pub top25_2024: Option<u8>,
    /// Documented relatives, both directions, sorted.
    pub related: Vec<CweId>,
    /// What it is a ChildOf in MITRE's research view (CWE-1000), sorted.
    pub parents: Vec<CweId>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    #[serde(default)]
    cwe: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    id: u32,
    name: String,
    #[serde(default)]
    top25_2024: Option<u8>,
    #[serde(default)]
    related: Vec<u32>,
    #[serde(default)]
    parents: Vec<u32>,
}

/// The table of known CWE ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CweTable {
    entries: BTreeMap<CweId, CweEntry>,
}

static BUILTIN: LazyLock<Result<CweTable, CweError>> =
    LazyLock::new(|| CweTable::parse("builtin:configs/cwe.toml", BUILTIN_CWES));

impl CweTable {
    /// The table compiled into the binary (parsed once; a unit test keeps
    /// it valid, so an error here is a fanscan bug).
    pub(crate) fn builtin() -> Result<&'static CweTable, CweError> {
        BUILTIN.as_ref().map_err(Clone::clone)
    }

    /// Parses and checks a table: ids unique and non-zero, names given,
    /// relatives and parents in the table and not the entry itself, Top 25
    /// ranks 1–25 and each used once. Relatives are made symmetric;
    /// parents stay one way (a child names its parent).
    pub(crate) fn parse(source: &str, text: &str) -> Result<Self, CweError> {
        let at = |problem: String| CweError::Table {
            source_name: source.to_string(),
            problem,
        };
        let raw: RawTable =
            toml::from_str(text).map_err(|e| at(crate::util::toml_error(text, &e)))?;
        let mut entries = BTreeMap::new();
        let mut ranks = BTreeMap::new();
        for entry in &raw.cwe {
            let id = CweId::from_number(entry.id)
                .ok_or_else(|| at("an entry has id 0: CWE ids start at 1".into()))?;
            if entry.name.trim().is_empty() {
                return Err(at(format!("{id} has no name: give MITRE's name for it")));
            }
            if let Some(rank) = entry.top25_2024 {
                if !(1..=25).contains(&rank) {
                    return Err(at(format!(
                        "{id}: top25_2024 = {rank} is not a rank from 1 to 25"
                    )));
                }
                if let Some(other) = ranks.insert(rank, id) {
                    return Err(at(format!(
                        "{id} and {other} both have top25_2024 = {rank}: one rank each"
                    )));
                }
            }
            let previous = entries.insert(
                id,
                CweEntry {
                    id,
                    name: entry.name.trim().to_string(),
                    top25_2024: entry.top25_2024,
                    related: Vec::new(),
                    parents: Vec::new(),
                },
            );
            if previous.is_some() {
                return Err(at(format!("{id} is listed twice: keep one entry")));
            }
        }
        let mut pairs = BTreeSet::new();
        for entry in &raw.cwe {
            let id = CweId(entry.id);
            for &number in &entry.related {
                let other = CweId::from_number(number)
                    .filter(|other| entries.contains_key(other))
                    .ok_or_else(|| {
                        at(format!(
                            "{id} lists CWE-{number} as related, which is not in the table: add an entry for it"
                        ))
                    })?;
                if other == id {
                    return Err(at(format!("{id} lists itself as related")));
                }
                pairs.insert((id, other));
                pairs.insert((other, id));
            }
        }
        for (a, b) in pairs {
            if let Some(entry) = entries.get_mut(&a) {
                entry.related.push(b);
            }
        }
        for raw_entry in &raw.cwe {
            let id = CweId(raw_entry.id);
            let mut parents = Vec::new();
            for &number in &raw_entry.parents {
                let parent = CweId::from_number(number)
                    .filter(|parent| entries.contains_key(parent))
                    .ok_or_else(|| {
                        at(format!(
                            "{id} lists CWE-{number} as a parent, which is not in the table: add an entry for it"
                        ))
                    })?;
                if parent == id {
                    return Err(at(format!("{id} lists itself as a parent")));
                }
                parents.push(parent);
            }
            parents.sort_unstable();
            parents.dedup();
            if let Some(entry) = entries.get_mut(&id) {
                entry.parents = parents;
            }
        }
        Ok(Self { entries })
    }

    /// The entry for `id`, when the table knows it.
    pub(crate) fn get(&self, id: CweId) -> Option<&CweEntry> {
        self.entries.get(&id)
    }

    /// Whether the table knows `id`.
    pub(crate) fn is_known(&self, id: CweId) -> bool {
        self.entries.contains_key(&id)
    }

    /// MITRE's name for `id`, when the table knows it.
    pub(crate) fn name(&self, id: CweId) -> Option<&str> {
        self.get(id).map(|e| e.name.as_str())
    }

    /// The documented relatives of `id` (none for an unknown id).
    pub(crate) fn related(&self, id: CweId) -> &[CweId] {
        self.get(id).map_or(&[], |e| e.related.as_slice())
    }

    /// The parents of `id` in MITRE's research view that the table lists
    /// (none for an unknown id).
    pub(crate) fn parents(&self, id: CweId) -> &[CweId] {
        self.get(id).map_or(&[], |e| e.parents.as_slice())
    }

    /// Whether `a` is `b`, its parent or its child (one step, as the
    /// CASTLE benchmark's score matches a reported CWE).
    pub(crate) fn same_parent_or_child(&self, a: CweId, b: CweId) -> bool {
        a == b || self.parents(a).contains(&b) || self.parents(b).contains(&a)
    }

    /// Whether `a` and `b` name the same weakness for matching: equal, or
    /// documented relatives.
    pub(crate) fn same_or_related(&self, a: CweId, b: CweId) -> bool {
        a == b || self.related(a).contains(&b)
    }

    /// Every entry, by id.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> impl Iterator<Item = &CweEntry> {
        self.entries.values()
    }
}

/// The common name inside MITRE's name, where it gives one: `SQL
/// Injection` for "Improper Neutralization of Special Elements used in an
/// SQL Command ('SQL Injection')"; else the whole name.
pub(crate) fn short_name(name: &str) -> &str {
    name.strip_suffix("')")
        .and_then(|rest| rest.rfind("('").map(|i| &rest[i + 2..]))
        .filter(|short| !short.is_empty())
        .unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> CweId {
        CweId::from_number(n).unwrap()
    }

    #[test]
    fn the_builtin_table_is_valid() {
        let table = CweTable::parse("builtin", BUILTIN_CWES).unwrap();
        assert!(table.entries().count() >= 100);
        assert_eq!(CweTable::builtin().unwrap(), &table);
    }

    #[test]
    fn the_builtin_table_holds_the_2024_top_25_in_order() {
        // MITRE's 2024 CWE Top 25 Most Dangerous Software Weaknesses.
        let top25 = [
            79, 787, 89, 352, 22, 125, 78, 416, 862, 434, 94, 20, 77, 287, 269, 502, 200, 863, 918,
            119, 476, 798, 190, 400, 306,
        ];
        let table = CweTable::builtin().unwrap();
        let mut ranked: Vec<(u8, u32)> = table
            .entries()
            .filter_map(|e| e.top25_2024.map(|r| (r, e.id.number())))
            .collect();
        ranked.sort_unstable();
        let numbers: Vec<u32> = ranked.iter().map(|&(_, n)| n).collect();
        assert_eq!(numbers, top25);
    }

    #[test]
    fn the_builtin_table_knows_every_class_the_rules_and_benchmarks_use() {
        let needed = [
            22, 78, 79, 89, 90, 643, 327, 328, 330, 338, 502, 614, 1004, 798, 259, 120, 121, 134,
            242, 676, 690, 476, 416, 190, 787, 125, 918, 611, 94, 95, 601, 352, 434, 862, 863, 287,
            306, 77, 200, 532, 1427, 312, 319, 295, // the rules' classes
            501, // the OWASP Benchmark's trust boundary category
            253, 362, 369, 401, 415, 522, 617, 628, 674, 761, 843, // CASTLE's C classes
        ];
        let table = CweTable::builtin().unwrap();
        let missing: Vec<u32> = needed
            .into_iter()
            .filter(|&n| !table.is_known(id(n)))
            .collect();
        assert!(missing.is_empty(), "not in configs/cwe.toml: {missing:?}");
    }

    #[test]
    fn names_are_mitres() {
        let table = CweTable::builtin().unwrap();
        assert_eq!(
            table.name(id(89)),
            Some(
                "Improper Neutralization of Special Elements used in an SQL Command ('SQL Injection')"
            )
        );
        assert_eq!(table.name(id(328)), Some("Use of Weak Hash"));
        assert_eq!(
            table.name(id(1004)),
            Some("Sensitive Cookie Without 'HttpOnly' Flag")
        );
        assert_eq!(table.name(id(99_999)), None);
    }

    #[test]
    fn short_names_are_the_common_names() {
        let table = CweTable::builtin().unwrap();
        let short = |n| short_name(table.name(id(n)).unwrap());
        assert_eq!(short(89), "SQL Injection");
        assert_eq!(short(79), "Cross-site Scripting");
        assert_eq!(short(22), "Path Traversal");
        assert_eq!(short(328), "Use of Weak Hash");
        assert_eq!(short(352), "Cross-Site Request Forgery (CSRF)");
        assert_eq!(short_name("x ('')"), "x ('')");
    }

    #[test]
    fn relatives_go_both_ways_and_one_step_only() {
        let table = CweTable::builtin().unwrap();
        for (a, b) in [
            (327, 328),
            (22, 23),
            (22, 36),
            (79, 80),
            (89, 564),
            (77, 78),
            (611, 776),
            (330, 338),
            (798, 259),
        ] {
            assert!(table.same_or_related(id(a), id(b)), "{a} ~ {b}");
            assert!(table.same_or_related(id(b), id(a)), "{b} ~ {a}");
        }
        assert!(table.same_or_related(id(89), id(89)));
        // Both relatives of 119 and of 787, not of each other: a read is
        // not a write.
        assert!(!table.same_or_related(id(121), id(125)));
        assert!(!table.same_or_related(id(89), id(79)));
        // An unknown id is only itself.
        assert!(table.same_or_related(id(99_999), id(99_999)));
        assert!(table.related(id(99_999)).is_empty());
        let every_entry_sorted = table
            .entries()
            .all(|e| e.related.windows(2).all(|w| w[0] < w[1]));
        assert!(every_entry_sorted);
    }

    #[test]
    fn parents_and_children_match_one_step_only() {
        let table = CweTable::builtin().unwrap();
        for (child, parent) in [(787, 119), (121, 787), (78, 77), (23, 22), (416, 825)] {
            assert!(
                table.same_parent_or_child(id(child), id(parent)),
                "{child} < {parent}"
            );
            assert!(
                table.same_parent_or_child(id(parent), id(child)),
                "{parent} > {child}"
            );
        }
        assert!(table.same_parent_or_child(id(787), id(787)));
        // A grandchild is not a child; siblings are not relatives here.
        assert!(!table.same_parent_or_child(id(121), id(119)));
        assert!(!table.same_parent_or_child(id(787), id(125)));
        assert!(table.parents(id(99_999)).is_empty());
    }

    #[test]
    fn castles_classes_have_their_parents_where_the_table_knows_them() {
        // The CASTLE-C250 dataset's classes whose MITRE parent (ChildOf,
        // research view) is an entry of the table.
        let table = CweTable::builtin().unwrap();
        for (child, parent) in [
            (78, 77),
            (89, 943),
            (125, 119),
            (190, 682),
            (253, 754),
            (369, 682),
            (415, 825),
            (416, 672),
            (476, 754),
            (770, 400),
            (787, 119),
            (822, 119),
            (843, 704),
        ] {
            assert!(
                table.parents(id(child)).contains(&id(parent)),
                "{child} < {parent}"
            );
        }
    }

    #[test]
    fn ids_parse_in_the_forms_people_write() {
        for text in [
            "CWE-89", "cwe-89", "Cwe-89", "89", " CWE-89 ", "CWE89", "CWE_89", "CWE 89", "CWE:89",
        ] {
            assert_eq!(CweId::parse(text), Ok(id(89)), "{text:?}");
        }
        assert_eq!(CweId::parse("CWE-1427").unwrap().to_string(), "CWE-1427");
        assert_eq!("79".parse::<CweId>(), Ok(id(79)));
    }

    #[test]
    fn ids_serialize_as_cwe_n_and_read_back_from_text_or_number() {
        assert_eq!(serde_json::to_string(&id(89)).unwrap(), "\"CWE-89\"");
        for text in ["\"CWE-89\"", "\"cwe-89\"", "89", "\"89\""] {
            assert_eq!(
                serde_json::from_str::<CweId>(text).unwrap(),
                id(89),
                "{text}"
            );
        }
        let error = serde_json::from_str::<CweId>("\"SQL\"").unwrap_err();
        assert!(error.to_string().contains("is not a CWE id"), "{error}");
        assert!(serde_json::from_str::<CweId>("0").is_err());
    }

    #[test]
    fn other_text_is_a_form_error_naming_it() {
        for text in [
            "",
            "CWE-",
            "SQL",
            "CWE-0",
            "0",
            "-89",
            "+89",
            "8.9",
            "CWE-89a",
            "CWE--89x",
            "99999999999",
        ] {
            let error = CweId::parse(text).unwrap_err();
            assert_eq!(
                error,
                CweError::Form {
                    text: text.to_string()
                },
                "{text:?}"
            );
        }
        assert_eq!(
            CweId::parse("SQL").unwrap_err().to_string(),
            "\"SQL\" is not a CWE id: write it as CWE-89 or 89"
        );
    }

    #[test]
    fn a_broken_table_names_the_problem() {
        let cases = [
            (
                "[[cwe]]\nid = 1\nname = \"a\"\n[[cwe]]\nid = 1\nname = \"b\"\n",
                "CWE-1 is listed twice",
            ),
            ("[[cwe]]\nid = 1\nname = \" \"\n", "CWE-1 has no name"),
            ("[[cwe]]\nid = 0\nname = \"a\"\n", "id 0"),
            (
                "[[cwe]]\nid = 1\nname = \"a\"\nrelated = [2]\n",
                "CWE-2 as related, which is not in the table",
            ),
            (
                "[[cwe]]\nid = 1\nname = \"a\"\nrelated = [1]\n",
                "lists itself",
            ),
            (
                "[[cwe]]\nid = 1\nname = \"a\"\ntop25_2024 = 26\n",
                "not a rank from 1 to 25",
            ),
            (
                "[[cwe]]\nid = 1\nname = \"a\"\ntop25_2024 = 3\n[[cwe]]\nid = 2\nname = \"b\"\ntop25_2024 = 3\n",
                "both have top25_2024 = 3",
            ),
            ("[[cwe]]\nid = 1\nname = \"a\"\nparent = 2\n", "line 4"),
            (
                "[[cwe]]\nid = 1\nname = \"a\"\nparents = [2]\n",
                "CWE-2 as a parent, which is not in the table",
            ),
            (
                "[[cwe]]\nid = 1\nname = \"a\"\nparents = [1]\n",
                "lists itself as a parent",
            ),
        ];
        for (text, expected) in cases {
            let error = CweTable::parse("t.toml", text).unwrap_err().to_string();
            assert!(error.starts_with("t.toml: "), "{error}");
            assert!(error.contains(expected), "{error} lacks {expected:?}");
        }
    }
}
