"""The role of a path by the conventions of its ecosystem (codenav.lang.conventions)."""

from __future__ import annotations

import pytest

from codenav.lang import conventions as c

CASES = [
    # JVM: Maven/Gradle source sets and class-name conventions
    ("src/main/java/org/acme/Parser.java", c.SOURCE),
    ("src/test/java/org/acme/ParserTest.java", c.TEST),
    ("okhttp/src/jvmTest/kotlin/okhttp3/CallTest.kt", c.TEST),
    ("core/src/it/java/org/acme/ClientIT.java", c.TEST),
    ("samples/guide/src/main/java/Hello.java", c.EXAMPLE),
    ("src/jmh/java/org/acme/ParseBench.java", c.BENCH),
    # Go
    ("gin.go", c.SOURCE),
    ("gin_test.go", c.TEST),
    ("testdata/protoexample/test.pb.go", c.FIXTURE),
    # JavaScript / TypeScript
    ("packages/zod/src/v4/core/schemas.ts", c.SOURCE),
    ("packages/zod/src/v4/classic/tests/string.test.ts", c.TEST),
    ("src/__tests__/parse.ts", c.TEST),
    ("lib/router.spec.js", c.TEST),
    ("play/playground/app.tsx", c.EXAMPLE),
    ("src/components/Button.stories.tsx", c.EXAMPLE),
    # Python
    ("src/click/core.py", c.SOURCE),
    ("tests/test_basic.py", c.TEST),
    ("testing/python/collect.py", c.TEST),
    ("conftest.py", c.TEST),
    ("django/db/migrations/autodetector.py", c.SOURCE),
    ("polls/migrations/0001_initial.py", c.GENERATED),
    ("docs/conf.py", c.DOCS),
    ("asv_bench/benchmarks/groupby.py", c.BENCH),
    # Rust
    ("tokio/src/runtime/mod.rs", c.SOURCE),
    ("tokio/src/runtime/tests.rs", c.TEST),
    ("tokio-test/src/io.rs", c.TEST),
    ("benches/sync_mpsc.rs", c.BENCH),
    ("examples/echo.rs", c.EXAMPLE),
    # C and C++
    ("src/server.c", c.SOURCE),
    ("deps/lua/src/lapi.c", c.VENDORED),
    ("test/format-test.cc", c.TEST),
    ("third_party/gtest/gtest.cc", c.VENDORED),
    # C#
    ("Src/Newtonsoft.Json/JsonConvert.cs", c.SOURCE),
    ("Src/Newtonsoft.Json.Tests/JsonConvertTest.cs", c.TEST),
    ("Src/App/Form1.Designer.cs", c.GENERATED),
    # Ruby and PHP
    ("lib/rack/request.rb", c.SOURCE),
    ("spec/rack/request_spec.rb", c.TEST),
    ("src/Illuminate/Foundation/Testing/TestCase.php", c.SOURCE),
    ("tests/Database/DatabaseQueryBuilderTest.php", c.TEST),
    # Swift: SwiftPM and Xcode layouts
    ("Source/Core/Session.swift", c.SOURCE),
    ("Sources/ArgumentParser/Parsing/ArgumentSet.swift", c.SOURCE),
    ("Tests/ArgumentParserUnitTests/ParserTests.swift", c.TEST),
    ("Tests/SessionTests.swift", c.TEST),
    ("MyAppUITests/LoginFlow.swift", c.TEST),
    ("Examples/math/Math.swift", c.EXAMPLE),
    # everywhere
    ("README.md", c.DOCS),
    ("vendor/github.com/pkg/errors/errors.go", c.VENDORED),
]


@pytest.mark.parametrize(("path", "role"), CASES)
def test_each_ecosystem_convention_names_the_role_of_a_path(path: str, role: str) -> None:
    assert c.role(path) == role


def test_a_convention_of_one_ecosystem_does_not_misread_another() -> None:
    assert c.role("internal/testing/helpers.go") == c.SOURCE  # Go: testing/ is a package
    assert c.role("deps/server.py") == c.SOURCE  # deps/ is vendored code in C only
    assert c.role("spec/parser.py") == c.SOURCE  # spec/ is tests in Ruby and JS only
    assert c.role("spec/parser_spec.rb") == c.TEST


def test_queries_about_tests_examples_docs_or_benchmarks_ask_for_that_role() -> None:
    assert c.asked_roles("fix the example app") == {c.EXAMPLE}
    assert c.asked_roles("update the docs for retries") == {c.DOCS}
    assert c.TEST in c.asked_roles("flaky retry test")
    assert c.BENCH in c.asked_roles("benchmark the parser")
    assert c.asked_roles("retry a failed upload") == set()


@pytest.mark.parametrize("path", [
    "build.gradle.kts", "okhttp/build.gradle.kts", "settings.gradle",
    "buildSrc/src/main/kotlin/Osgi.kt",
    "build-logic/src/main/kotlin/okhttp.publish-conventions.gradle.kts", "tokio/build.rs",
    "setup.py", "noxfile.py", "Rakefile", "rack.gemspec", "lib/tasks/db.rake",
    "vite.config.ts", "packages/zod/rollup.config.mjs", "CMakeLists.txt", "meson.build",
    "Package.swift", "Package@swift-6.0.swift",
])
def test_build_scripts_are_known_by_each_ecosystems_names(path: str) -> None:
    assert c.is_build_script(path)


@pytest.mark.parametrize("path", [
    "src/setup_utils.py", "lib/build.py", "src/config.ts", "okhttp/src/main/kotlin/Build.kt",
    "src/gradle_parser.rs", "docs/setup.md", "buildsystem/Main.java",
    "Sources/PackageModel/Package.swift.orig", "Sources/Shop/PackageLoader.swift",
])
def test_source_that_only_looks_like_a_build_script_is_not_one(path: str) -> None:
    assert not c.is_build_script(path)


def test_build_scripts_stay_source_and_a_query_about_the_build_asks_for_them() -> None:
    assert c.role("build.gradle.kts") == c.SOURCE
    assert c.role("setup.py") == c.SOURCE
    for query in ("Update dependency com.squareup.okio:okio to v3.9.0",
                  "Prepare for release 5.0.0-alpha.14.", "Dependency bumps",
                  "Update plugin com.diffplug.spotless to v8.3.0", "Fix CI on the JDK 8 job"):
        assert c.BUILD in c.asked_roles(query), query
    for query in ("retry a failed upload", "parse the cookie header", "rebuild the index"):
        assert c.BUILD not in c.asked_roles(query), query
