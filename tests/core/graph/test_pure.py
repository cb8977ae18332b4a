"""The graph's pure functions, pinned on fixed inputs: PageRank and the centrality prior,
and how receivers and declared types are normalised before resolution."""

from __future__ import annotations

import pytest

from codenav.graph.centrality import pagerank, priors
from codenav.graph.extract import base_type, normalize_qualifier
from codenav.lang import swift
from codenav.search import fusion


def test_pagerank_sums_to_one_and_favours_the_file_everyone_imports() -> None:
    ranks = pagerank(["a", "b", "c", "util"],
                     [("a", "util", 1.0), ("b", "util", 1.0), ("c", "util", 1.0),
                      ("util", "a", 1.0)])
    assert sum(ranks.values()) == pytest.approx(1.0)
    assert max(ranks, key=lambda k: ranks[k]) == "util"
    assert ranks["b"] == pytest.approx(ranks["c"])


def test_pagerank_is_the_same_to_the_last_bit_whatever_order_the_links_come_in() -> None:
    """Links are read from a table, in the order its rows lie on disk: the ranks must not
    depend on it (float sums in another order differ in their last bits)."""
    import random

    rng = random.Random(3)
    nodes = [f"f{i}" for i in range(300)]
    links = [(rng.choice(nodes), rng.choice(nodes), rng.choice([1.0, 1.7, 2.1, 0.3]))
             for _ in range(3000)]
    first = pagerank(nodes, links)
    for _ in range(5):
        rng.shuffle(links)
        assert pagerank(list(reversed(nodes)), links) == first


def test_a_file_without_links_keeps_the_baseline_rank() -> None:
    ranks = pagerank(["alone", "x", "y"], [("x", "y", 1.0)])
    assert ranks["alone"] > 0 and ranks["y"] > ranks["alone"]


def test_priors_are_log_scaled_into_zero_to_one() -> None:
    scaled = priors({"hub": 0.5, "mid": 0.05, "leaf": 0.001})
    assert scaled["hub"] == 1.0
    assert 0.0 < scaled["leaf"] < scaled["mid"] < 1.0
    assert priors({}) == {}


def test_the_centrality_prior_is_small() -> None:
    assert fusion.centrality_prior(0.0) == 1.0
    assert fusion.centrality_prior(1.0) == pytest.approx(1.1)
    assert fusion.centrality_prior(7.0) == pytest.approx(1.1)


@pytest.mark.parametrize(("raw", "language", "expected"), [
    ("self.repo.", "python", "this.repo"),
    ("super().", "python", "super"),
    ("this.f.", "java", "this.f"),
    ("new Foo(x).", "java", "Foo()"),
    ("book.open(owner).", "kotlin", "book.open()"),
    ("a.b(c(d), \")\").e.", "typescript", "a.b().e"),
    ("x[0].", "java", "<expr>"),
    ("$this->repo->", "php", "this.repo"),
    ("parent::", "php", "super"),
    ("@total.", "ruby", "this.total"),
    ("Billing::Util.", "ruby", "Billing.Util"),
    ("crate::log::", "rust", "crate::log"),
    ("Self::", "rust", "this"),
    ("Store::new().", "rust", "Store::new()"),
    ("this->", "cpp", "this"),
    ("base.", "csharp", "super"),
    # call arguments go whatever they hold: nested calls, brackets, quoted parentheses
    ("a(b(c)).d(e).f.", "java", "a().d().f"),
    ("f(x[0], {k: v}).g.", "typescript", "f().g"),
    ("f(')', `(`, \"(\").g.", "typescript", "f().g"),
    ("cfg.get(\"a(b\").x.", "java", "cfg.get().x"),
    ("f(x)[0].", "java", "<expr>"),
    ("f(x.", "java", "<expr>"),
    ("f(x)).", "java", "<expr>"),
])
def test_receivers_are_normalised_to_paths(raw: str, language: str, expected: str) -> None:
    assert normalize_qualifier(raw, language) == expected


@pytest.mark.parametrize(("text", "language", "expected"), [
    ("Optional[Order]", "python", "Order"),
    ("Foo | None", "python", "Foo"),
    ('"models.User"', "python", "models.User"),
    ("List<Foo>", "java", "List"),
    ("Foo[]", "java", ""),
    ("*st.Store", "go", "st.Store"),
    ("[]Item", "go", ""),
    ("&mut Arc<Cache>", "rust", "Cache"),
    ("std::unique_ptr<Dense>", "cpp", "Dense"),
    ("?User", "php", "User"),
    ("\\App\\Models\\User", "php", "App.Models.User"),
    ("var", "java", ""),
])
def test_declared_types_reduce_to_the_class_they_name(text: str, language: str,
                                                     expected: str) -> None:
    assert base_type(text, language) == expected


MANIFEST = """// swift-tools-version:5.9
import PackageDescription

let package = Package(
  name: "shop",
  products: [.library(name: "ShopKit", targets: ["Shop"])],
  dependencies: [.package(url: "https://example.com/log.git", from: "1.0.0")],
  targets: [
    .target(name: "Shop", dependencies: [.product(name: "Log", package: "log")],
            path: "Lib/Shop (core)"),
    .executableTarget(name: "App", dependencies: ["Shop"]),
    .testTarget(name: "ShopTests", dependencies: ["Shop"],
                resources: [.copy("Fixtures/path: \\"x\\"")]),
  ]
)
"""


def test_a_swiftpm_manifest_names_its_targets_and_their_directories() -> None:
    targets = swift.package_targets("pkg/Package.swift", MANIFEST)
    assert ("pkg/Lib/Shop (core)", "Shop") in targets  # the path it gives
    assert ("pkg/Sources/App", "App") in targets and ("pkg/Source/App", "App") in targets
    assert ("pkg/Tests/ShopTests", "ShopTests") in targets
    assert {name for _d, name in targets} == {"Shop", "App", "ShopTests"}  # no dependency


def test_a_swift_files_module_is_its_targets_else_the_layouts() -> None:
    targets = dict(swift.package_targets("Package.swift", MANIFEST))
    assert swift.module_of("Lib/Shop (core)/Model/Item.swift", targets) == "Shop"
    assert swift.module_of("Tests/ShopTests/ItemTests.swift", targets) == "ShopTests"
    assert swift.module_of("Sources/Other/Thing.swift", targets) == "Other"  # not declared
    assert swift.module_of("MyApp/Views/Main.swift") == "MyApp"  # an Xcode project's folder
    assert swift.module_of("main.swift") == ""


def test_a_manifest_of_unbalanced_calls_is_read_in_bounded_time() -> None:
    """Every unclosed ``.target(`` is read up to ``MAX_TARGET_CHARS`` ahead, not to the end
    of the file, and at most ``MAX_TARGETS`` are: a hostile manifest of a megabyte costs a
    bounded amount of work."""
    text = '.target(name: "T", path: "x"\n' * 40000
    targets = swift.package_targets("Package.swift", text)
    assert len(targets) == swift.MAX_TARGETS
    assert targets[0] == ("x", "T")
