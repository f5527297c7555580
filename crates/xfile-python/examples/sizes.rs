use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static COUNT: AtomicUsize = AtomicUsize::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Relaxed);
        COUNT.fetch_add(1, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        COUNT.fetch_sub(1, Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}
#[global_allocator]
static A: Counting = Counting;
fn freed<T>(v: T) -> (usize, usize) {
    let b = LIVE.load(Relaxed);
    let c = COUNT.load(Relaxed);
    drop(v);
    (b - LIVE.load(Relaxed), c - COUNT.load(Relaxed))
}
fn main() {
    let root = std::env::args().nth(1).unwrap();
    let mut totals: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    let mut add = |k: &'static str, v: (usize, usize)| {
        let e = totals.entry(k).or_default();
        e.0 += v.0;
        e.1 += v.1;
    };
    let mut stack = vec![std::path::PathBuf::from(root)];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_some_and(|x| x == "py") {
                let Ok(text) = std::fs::read_to_string(&p) else {
                    continue;
                };
                files += 1;
                let b = LIVE.load(Relaxed);
                let c = COUNT.load(Relaxed);
                let mut f = xfile_python::extract(&text);
                add("TOTAL", (LIVE.load(Relaxed) - b, COUNT.load(Relaxed) - c));
                add("sites", freed(std::mem::take(&mut f.sites)));
                add("definitions", freed(std::mem::take(&mut f.definitions)));
                add("arguments", freed(std::mem::take(&mut f.arguments)));
                let s = std::mem::take(&mut f.semantic);
                let mut s = Arc::try_unwrap(s).unwrap();
                add("s.imports", freed(std::mem::take(&mut s.imports)));
                add("s.bindings", freed(std::mem::take(&mut s.bindings)));
                add("s.calls", freed(std::mem::take(&mut s.calls)));
                add("s.bases", freed(std::mem::take(&mut s.bases)));
                add("s.all", freed(std::mem::take(&mut s.all)));
                add("s.all_from", freed(std::mem::take(&mut s.all_from)));
                add("s.dynamic", freed(std::mem::take(&mut s.dynamic)));
                add("s.classes", freed(std::mem::take(&mut s.classes)));
                add("s.expressions", freed(std::mem::take(&mut s.expressions)));
                add("s.names", freed(std::mem::take(&mut s.names)));
                add("s.reads", freed(std::mem::take(&mut s.reads)));
                add("s.call_sites", freed(std::mem::take(&mut s.call_sites)));
                add("s.scopes", freed(std::mem::take(&mut s.scopes)));
                add("s.types", freed(std::mem::take(&mut s.types)));
                add("s.own_returns", freed(std::mem::take(&mut s.own_returns)));
                add("s.properties", freed(std::mem::take(&mut s.properties)));
                add("s.plugins", freed(std::mem::take(&mut s.plugins)));
                add("s.fixtures", freed(std::mem::take(&mut s.fixtures)));
                add("rest", freed((f, s)));
            }
        }
    }
    println!("files {files}");
    for (k, (b, c)) in totals {
        println!("{k:16} {:8.2} MB {c:9} allocs", b as f64 / 1e6);
    }
}
