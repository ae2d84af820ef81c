//! Spreading independent work over the machine's cores: scoped threads, one contiguous run of
//! items per core, results in the items' order. Used by the vow render thread (distinct vows
//! of a batch, their cards, the `/who` records) and the publisher (the changed files of a
//! write).

/// `f` applied to every item, results in item order, the items split into one run per
/// available core (inline when there is one core or one item). Every item of a run whose
/// thread panicked gives `on_panic()`, so the output always has one result per item.
pub fn map_on_every_core<T: Send, R: Send>(
    items: Vec<T>,
    f: impl Fn(T) -> R + Sync,
    on_panic: impl Fn() -> R,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    let per = items.len().div_ceil(threads);
    let mut runs: Vec<Vec<T>> = Vec::with_capacity(threads);
    for item in items {
        match runs.last_mut() {
            Some(run) if run.len() < per => run.push(item),
            _ => runs.push(vec![item]),
        }
    }
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .into_iter()
            .map(|run| {
                let len = run.len();
                (
                    len,
                    scope.spawn(move || run.into_iter().map(f).collect::<Vec<R>>()),
                )
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|(len, h)| {
                h.join()
                    .unwrap_or_else(|_| (0..len).map(|_| on_panic()).collect())
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order() {
        let out = map_on_every_core((0..101).collect(), |x: u32| x * 2, || 0);
        assert_eq!(out, (0..101).map(|x| x * 2).collect::<Vec<_>>());
        assert!(map_on_every_core(Vec::<u8>::new(), |x| x, || 0).is_empty());
    }
}
