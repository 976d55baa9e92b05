//! The shop's order form in a real browser. Debian's headless
//! `chromium`, driven through `chromedriver` (WebDriver) by `fantoccini`,
//! double- and triple-clicks "Place order" and reloads the answer, which
//! resubmits the form. The page has no script: what keeps it to one order is
//! the key in the form's hidden field, made when the form was rendered.
//! The screenshot is kept at `target/shop-browser/order-placed.png`.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;

use crate::shop::support::app::{IdemStore, server::Limits};
use crate::shop::support::{Running, start};

/// `chromedriver` on a spare port, in its own process group so the browsers
/// it starts end with it.
struct Driver {
    child: Child,
    url: String,
    profile: crate::support::tempdir::TempDir,
}

/// Where the test finds the browser and its driver: a missing one fails
/// before anything starts, saying how to install it (never a skip).
const CHROMIUM: &str = "/usr/bin/chromium";

fn preflight() {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
    };
    let missing: Vec<&str> = [
        ("chromium", std::path::Path::new(CHROMIUM).is_file()),
        ("chromium-driver", on_path("chromedriver")),
    ]
    .into_iter()
    .filter(|(_, present)| !present)
    .map(|(package, _)| package)
    .collect();
    assert!(
        missing.is_empty(),
        "the shop's browser test needs Debian's headless Chromium and its WebDriver \
         ({CHROMIUM} and `chromedriver` on PATH); missing: {}. Install them with \
         `sudo apt-get install chromium chromium-driver` (the README's prerequisites)",
        missing.join(", ")
    );
}

impl Driver {
    fn start() -> Driver {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a spare port")
            .port();
        use std::os::unix::process::CommandExt as _;
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start chromedriver (Debian's chromium-driver package)");
        Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            profile: crate::support::tempdir::TempDir::new(),
        }
    }

    /// A headless browser session (retried while the driver starts).
    async fn session(&self) -> Client {
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=900,600",
        ];
        let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        args.push(format!("--user-data-dir={}", self.profile.path().display()));
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({ "binary": CHROMIUM, "args": args }),
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = ClientBuilder::new(HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&self.url)
                .await;
            match r {
                Ok(c) => return c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("no chromium session from chromedriver in 30 s: {e}"),
            }
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
    }
}

/// `n` clicks on the submit button, 30 ms apart (a quick double click; the
/// order takes a second here, so every click lands on the form, even on a
/// loaded machine). Clicks in one event-loop turn would be merged by the
/// browser into one submission.
async fn click_submit(c: &Client, n: usize) {
    let button = c
        .find(Locator::Id("submit"))
        .await
        .expect("the submit button");
    let mut mouse = MouseActions::new("mouse".into()).then(PointerAction::MoveToElement {
        element: button,
        duration: None,
        x: 0.0,
        y: 0.0,
    });
    for i in 0..n {
        if i > 0 {
            mouse = mouse.then(PointerAction::Pause {
                duration: Duration::from_millis(30),
            });
        }
        mouse = mouse
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
    }
    c.perform_actions(mouse).await.expect("clicks");
}

/// The order number the page shows, once it shows one.
async fn order_shown(c: &Client) -> String {
    let el = c
        .wait()
        .for_element(Locator::Id("order-no"))
        .await
        .expect("an order page");
    el.text().await.expect("order number text")
}

/// Waits until the shop has received `n` form submissions in all (10 s at most).
async fn posts_reach(shop: &Running, n: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = shop.shop().form_posts.load(Ordering::SeqCst);
        if seen >= n || Instant::now() > deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn artifact_dir() -> PathBuf {
    // <target>/debug/deps/it-<hash>: the artifact goes under <target>.
    let exe = std::env::current_exe().expect("test binary path");
    let target = exe.ancestors().nth(3).expect("target dir").to_path_buf();
    let dir = target.join("shop-browser");
    std::fs::create_dir_all(&dir).expect("artifact dir");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_triple_click_and_resubmitting_reload_place_one_order_per_form() {
    preflight();
    let shop = start(IdemStore::Memory, Limits::default()).await;
    shop.shop().order_pause_ms.store(1000, Ordering::SeqCst);
    let driver = Driver::start();
    let c = driver.session().await;
    let base = shop.base();

    // One rendered form: a double click, then two reloads that resubmit it.
    c.goto(&format!("{base}/")).await.expect("the form");
    click_submit(&c, 2).await;
    let first = order_shown(&c).await;
    let after_double = posts_reach(&shop, 2).await;
    let mut shown = vec![first.clone()];
    for reload in 1..=2 {
        c.refresh().await.expect("reload");
        let seen = posts_reach(&shop, after_double + reload).await;
        assert_eq!(
            seen,
            after_double + reload,
            "reload {reload} resubmitted the form"
        );
        shown.push(order_shown(&c).await);
    }

    // A second render is a second form: a triple click, then a reload.
    c.goto(&format!("{base}/")).await.expect("the form again");
    let before = shop.shop().form_posts.load(Ordering::SeqCst);
    click_submit(&c, 3).await;
    let second = order_shown(&c).await;
    let after_triple = posts_reach(&shop, before + 3).await;
    c.refresh().await.expect("reload");
    posts_reach(&shop, after_triple + 1).await;
    let second_again = order_shown(&c).await;

    let png = c.screenshot().await.expect("screenshot");
    let file = artifact_dir().join("order-placed.png");
    std::fs::write(&file, &png).expect("write the screenshot");
    let _ = c.close().await;
    drop(driver);

    let posts = shop.shop().form_posts.load(Ordering::SeqCst);
    let orders = shop.count("SELECT COUNT(*) FROM orders").await;
    let runs = shop.shop().order_runs.load(Ordering::SeqCst);
    eprintln!(
        "browser: form 1 double click -> {after_double} POSTs, + 2 reloads; form 2 triple click -> {} POSTs, + 1 reload; \
         {posts} POSTs in all, {runs} order body runs, {orders} orders; pages showed {shown:?} then {second:?}, {second_again:?}; screenshot {}",
        after_triple - before,
        file.display()
    );
    assert!(
        after_double >= 2,
        "the double click sent {after_double} POST(s)"
    );
    assert!(
        after_triple - before >= 2,
        "the triple click sent {} POST(s)",
        after_triple - before
    );
    assert!(shown.iter().all(|s| *s == first), "form 1 pages: {shown:?}");
    assert_eq!(second, second_again, "form 2 pages");
    assert_ne!(first, second, "a new render is a new order");
    assert_eq!(
        orders, 2,
        "one order per rendered form, after {posts} POSTs"
    );
    assert_eq!(runs, 2, "the order body ran once per form");
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
}
