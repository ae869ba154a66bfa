//! A map of the spanned tree: its entries in file order, kept as a list while
//! the map is small and as an index from [`SMALL_MAP`] entries on.

use indexmap::IndexMap;

use super::Entry;
use crate::diagnostic::Span;

/// Most maps hold fewer entries than this: they stay a list searched in place.
pub(super) const SMALL_MAP: usize = 16;

/// The index of a large mapping. Keyed with foldhash, which is much cheaper
/// than SipHash on short keys; randomly seeded, so that keys crafted to collide
/// cannot make a large map quadratic.
type Index = IndexMap<String, Entry, foldhash::fast::RandomState>;

/// A mapping's entries in file order. Most maps of a composition are small
/// (`{ timeout: 10s }`): those are a list searched in place, one allocation and
/// no hashing. From [`SMALL_MAP`] entries on, an index finds the keys.
#[derive(Clone, Debug)]
pub enum Mapping {
    Small(Vec<(String, Entry)>),
    Large(Box<Index>),
}

impl Default for Mapping {
    fn default() -> Self {
        Mapping::Small(Vec::new())
    }
}

impl PartialEq for Mapping {
    fn eq(&self, other: &Mapping) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

/// The entries of a [`Mapping`], in file order.
pub enum Iter<'a> {
    Small(std::slice::Iter<'a, (String, Entry)>),
    Large(indexmap::map::Iter<'a, String, Entry>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a String, &'a Entry);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(entries) => entries.next().map(|(k, e)| (k, e)),
            Iter::Large(entries) => entries.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Small(entries) => entries.size_hint(),
            Iter::Large(entries) => entries.size_hint(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a Mapping {
    type Item = (&'a String, &'a Entry);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for Mapping {
    type Item = (String, Entry);
    type IntoIter = Box<dyn Iterator<Item = (String, Entry)>>;

    fn into_iter(self) -> Self::IntoIter {
        match self {
            Mapping::Small(entries) => Box::new(entries.into_iter()),
            Mapping::Large(index) => Box::new(index.into_iter()),
        }
    }
}

/// The entries of a [`Mapping`], in file order, to change in place.
pub enum ValuesMut<'a> {
    Small(std::slice::IterMut<'a, (String, Entry)>),
    Large(indexmap::map::ValuesMut<'a, String, Entry>),
}

impl<'a> Iterator for ValuesMut<'a> {
    type Item = &'a mut Entry;

    fn next(&mut self) -> Option<&'a mut Entry> {
        match self {
            ValuesMut::Small(entries) => entries.next().map(|(_, e)| e),
            ValuesMut::Large(entries) => entries.next(),
        }
    }
}

impl Mapping {
    pub fn len(&self) -> usize {
        match self {
            Mapping::Small(entries) => entries.len(),
            Mapping::Large(index) => index.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        match self {
            Mapping::Small(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, e)| e),
            Mapping::Large(index) => index.get(key),
        }
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        match self {
            Mapping::Small(entries) => entries.iter_mut().find(|(k, _)| k == key).map(|(_, e)| e),
            Mapping::Large(index) => index.get_mut(key),
        }
    }

    pub fn first(&self) -> Option<(&String, &Entry)> {
        self.iter().next()
    }

    pub fn iter(&self) -> Iter<'_> {
        match self {
            Mapping::Small(entries) => Iter::Small(entries.iter()),
            Mapping::Large(index) => Iter::Large(index.iter()),
        }
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.iter().map(|(_, e)| e)
    }

    pub fn values_mut(&mut self) -> ValuesMut<'_> {
        match self {
            Mapping::Small(entries) => ValuesMut::Small(entries.iter_mut()),
            Mapping::Large(index) => ValuesMut::Large(index.values_mut()),
        }
    }

    /// Appends `key` unless it is there: then hands back the key and where
    /// the first one was written. The one place a list becomes an index (at
    /// [`SMALL_MAP`] entries); each key is compared or hashed once.
    pub fn add(&mut self, key: String, entry: Entry) -> Result<(), (String, Span)> {
        match self {
            Mapping::Small(entries) => {
                if let Some((_, first)) = entries.iter().find(|(k, _)| *k == key) {
                    return Err((key, first.key_span));
                }
                if entries.len() + 1 < SMALL_MAP {
                    entries.push((key, entry));
                } else {
                    let mut index = Index::with_capacity_and_hasher(2 * SMALL_MAP, Default::default());
                    index.extend(entries.drain(..));
                    index.insert(key, entry);
                    *self = Mapping::Large(Box::new(index));
                }
                Ok(())
            }
            Mapping::Large(index) => match index.entry(key) {
                indexmap::map::Entry::Occupied(first) => Err((first.key().clone(), first.get().key_span)),
                indexmap::map::Entry::Vacant(slot) => {
                    slot.insert(entry);
                    Ok(())
                }
            },
        }
    }

    /// Sets `key`: in its place when it is there, else at the end.
    pub fn insert(&mut self, key: String, entry: Entry) {
        match self.get_mut(&key) {
            Some(e) => *e = entry,
            None => self.add(key, entry).expect("the key is not there"),
        }
    }

    /// Removes `key`, keeping the order of the others.
    pub fn shift_remove(&mut self, key: &str) -> Option<Entry> {
        match self {
            Mapping::Small(entries) => entries.iter().position(|(k, _)| k == key).map(|i| entries.remove(i).1),
            Mapping::Large(index) => index.shift_remove(key),
        }
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut Entry) -> bool) {
        match self {
            Mapping::Small(entries) => entries.retain_mut(|(k, e)| keep(k, e)),
            Mapping::Large(index) => index.retain(|k, e| keep(k, e)),
        }
    }
}
