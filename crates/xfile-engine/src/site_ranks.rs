//! A file's sites as the whole-project class stages see them.
//!
//! A site is an index into its file's table of positions, in source order,
//! so a line added near the top of a file (an import, say) moves the index
//! of every site below it. The `classes` stage and the class table read
//! every file's class declarations; if they saw those indices, such an
//! edit to any file holding a class would re-run both over the whole
//! project. They see instead each site's rank among the sites of the
//! file's own class declarations (the facts the `classes` stage reads),
//! which only changes when a declaration does. Ranks keep the order of the
//! sites (the bases of a class stay in order) and the stage only joins
//! sites for equality, so its tuples are those of a run over the real
//! sites with each site renamed: `db::classes_outputs` renames them back
//! for everything that shows or explains them.

use super::datalog::{InputFact, Site, Value};

/// The sites of one file's class declarations, sorted.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SiteRanks(Box<[Site]>);

impl SiteRanks {
    /// The sites `facts` (one file's) hold.
    pub(crate) fn of<'a>(facts: impl Iterator<Item = &'a InputFact>) -> SiteRanks {
        let mut sites: Vec<Site> = facts
            .flat_map(InputFact::values)
            .filter_map(|value| match value {
                Value::Site(site) => Some(site),
                _ => None,
            })
            .collect();
        sites.sort_unstable();
        sites.dedup();
        SiteRanks(sites.into())
    }

    /// The rank of `site`, one of the sites these ranks were made from.
    pub(crate) fn rank(&self, site: Site) -> Site {
        let found = self.0.binary_search(&site);
        debug_assert!(found.is_ok(), "{site:?} is not a site of the facts ranked");
        // Unreachable for the facts ranked; a site past every rank keeps
        // any other fact from joining with it.
        let index = found.unwrap_or(self.0.len());
        Site(u32::try_from(index).unwrap_or(u32::MAX))
    }

    /// The site whose rank is `rank`.
    pub(crate) fn site(&self, rank: Site) -> Site {
        let found = usize::try_from(rank.0).ok().and_then(|i| self.0.get(i));
        debug_assert!(found.is_some(), "{rank:?} is not a rank of these sites");
        found.copied().unwrap_or(rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datalog::{BaseOf, Node, PatchesAttr, Sym};

    #[test]
    fn ranks_keep_order_and_survive_a_shift() {
        let facts = |shift: u32| {
            vec![
                InputFact::BaseOf(BaseOf(Node(1), Site(7 + shift), Sym(2))),
                InputFact::BaseOf(BaseOf(Node(1), Site(3 + shift), Sym(2))),
                InputFact::PatchesAttr(PatchesAttr(
                    Node(1),
                    Site(9 + shift),
                    Node(4),
                    Sym(5),
                    Sym(6),
                )),
            ]
        };
        let before = SiteRanks::of(facts(0).iter());
        let after = SiteRanks::of(facts(40).iter());
        for (old, new) in [(3, 43), (7, 47), (9, 49)] {
            assert_eq!(before.rank(Site(old)), after.rank(Site(new)));
            assert_eq!(after.site(after.rank(Site(new))), Site(new));
        }
        assert!(before.rank(Site(3)) < before.rank(Site(7)));
    }
}
