//! The integration package builds against the library it tests.

#[test]
fn links_the_library() {
    let pool = schedpool::ScheduledThreadPool::new(1);
    let h = pool.submit(|| 7).unwrap();
    assert_eq!(h.join().unwrap(), 7);
}
