"""A small Gradle project (Kotlin) with root and module build scripts: queries about the build
should find the scripts, queries about the code the code (find_files, lexical and hybrid)."""

GRADLE_PROJECT = {
    "settings.gradle.kts": 'rootProject.name = "acme"\ninclude(":client")\n',
    "build.gradle.kts":
        'allprojects {\n  group = "com.acme"\n  version = "2.1.0-SNAPSHOT"\n}\n\n'
        "publishing {\n  repositories {\n"
        '    maven { url = uri(if (isRelease) "releases" else "snapshots") }\n  }\n}\n',
    "client/src/main/kotlin/acme/ConnectionPool.kt":
        "package acme\n\n/** Keeps idle connections for reuse until they are released. */\n"
        "class ConnectionPool {\n  fun release(connection: Connection) { connection.close() }\n"
        "  fun evictAll() {}\n}\n",
    "client/build.gradle.kts":
        'plugins { kotlin("jvm") }\n\ndependencies {\n'
        '  implementation("com.squareup.okio:okio:3.9.0")\n'
        '  testImplementation("junit:junit:4.13.2")\n}\n',
    "client/src/main/kotlin/acme/Uploader.kt":
        "package acme\n\nimport okio.Buffer\nimport okio.BufferedSink\n\n"
        "/** Uploads a buffer through an okio sink. */\nclass Uploader(val sink: BufferedSink) {\n"
        "  fun upload(buffer: Buffer) { sink.writeAll(buffer) }\n}\n",
    "client/src/main/kotlin/acme/Checksum.kt":
        "package acme\n\nimport okio.ByteString\n\n"
        "fun checksum(bytes: ByteString): String = bytes.sha256().hex()\n",
}
