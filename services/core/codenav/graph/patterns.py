"""Tree-sitter query patterns, per language, for the references a file makes.

Capture names say what a node is; ``extract`` turns matches into reference rows:

    @call        a called name (function, method, constructor); @call.expr is the callee
                 expression, whose text before the name is the qualifier (``self.repo.``)
    @new         an instantiated class (``new Foo()``, ``Foo{}``); kind ``call``
    @type        a type name in an annotation, declaration, cast or generic argument
    @extends     a base class, or an interface an interface extends
    @implements  an implemented interface, trait or mixin
    @var.name    a variable, parameter or field, with @var.type (its declared type) or
                 @var.call (a call that initialises it: ``x = Foo()``, a class if Foo is one)
    @field.name  the same, for an attribute of the enclosing class (``self.x = ...``)
    @tparam      a type parameter (``<T>``): type uses of that name are not references
    @ret.name    a function or method, with @ret.type its declared return type (what a
                 variable initialised by a call to it holds)
    @decl        a C/C++ prototype (a declaration without a body)
    @super       a bare ``super`` call (Ruby): the same method of the base class
    @bare        a bare identifier (Ruby): a method call unless a local of that name exists
    @local       a Ruby local variable or parameter (so a bare identifier is not a call)

``.expr`` captures, when present, give the qualifier: the callee text before the name.
Queries run in C; Python only visits the captured nodes.
"""

from __future__ import annotations

from codenav.lang import LANGUAGES

PATTERNS: dict[str, str] = {lang.name: lang.references for lang in LANGUAGES if lang.references}
"""Each graphed language's patterns (``codenav.lang.<language>.LANGUAGE.references``)."""
