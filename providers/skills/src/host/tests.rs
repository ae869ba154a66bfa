use super::*;
use notify::event::ModifyKind;

/// Events arrive every 5 ms for half a second: one republish once they pause;
/// a later event is another; a stream that never pauses republishes every `MAX_SETTLE`.
#[tokio::test(start_paused = true)]
async fn a_burst_of_events_is_one_republish() {
    let dir = std::env::temp_dir().join(format!("seam-skills-coalesce-{}", std::process::id()));
    let root = dir.join("custom");
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::write(root.join("a/SKILL.md"), "---\nname: a\ndescription: d\n---\n").unwrap();
    let config = FsSkills::only(&root);
    let mount = Arc::new(SkillsMount::new("m".into(), config, Some(dir.clone()), Changes::default()));
    mount.observe(&dir);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let stop = tokio_util::sync::CancellationToken::new();
    let task = tokio::spawn(coalesce(Arc::downgrade(&mount), rx, stop.clone()));
    let send = |path: PathBuf| tx.send(Ok(notify::Event::new(EventKind::Modify(ModifyKind::Any)).add_path(path))).unwrap();
    let tick = Duration::from_millis(5);

    for _ in 0..100 {
        send(root.join("a/SKILL.md"));
        tokio::time::sleep(tick).await;
    }
    assert_eq!(mount.republishes(), 0, "nothing while events keep coming (500 ms, under MAX_SETTLE)");
    tokio::time::sleep(SETTLE + tick).await;
    assert_eq!(mount.republishes(), 1, "100 events, one republish");

    send(root.join("a"));
    tokio::time::sleep(SETTLE + tick).await;
    assert_eq!(mount.republishes(), 2, "a pause longer than SETTLE separates bursts");

    send(dir.join("elsewhere"));
    tokio::time::sleep(SETTLE + tick).await;
    assert_eq!(mount.republishes(), 2, "an event outside the roots republishes nothing");

    let stream = MAX_SETTLE.as_millis() as u32 / 5 + 20;
    for _ in 0..stream {
        send(root.join("a/SKILL.md"));
        tokio::time::sleep(tick).await;
    }
    assert_eq!(mount.republishes(), 3, "a stream that never pauses still republishes after MAX_SETTLE");

    // The kernel's queue overflowed: an event with no paths, flagged for a rescan.
    let revision = mount.revision();
    tx.send(Ok(notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan))).unwrap();
    tokio::time::sleep(SETTLE + tick).await;
    assert_eq!(mount.republishes(), 4, "lost events republish");
    assert!(mount.revision() > revision, "and every root is read again");
    stop.cancel();
    task.await.unwrap();
}
