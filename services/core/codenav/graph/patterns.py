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

# ruff: noqa: E501

from __future__ import annotations

_JAVA = r"""
(method_invocation name: (identifier) @call) @call.expr
(method_reference (identifier) @call .) @call.expr
(object_creation_expression type: (type_identifier) @new)
(object_creation_expression type: (generic_type (type_identifier) @new))
(object_creation_expression type: (scoped_type_identifier (type_identifier) @new .) @new.expr)
(object_creation_expression type: (generic_type (scoped_type_identifier (type_identifier) @new .) @new.expr))
(superclass (type_identifier) @extends)
(superclass (generic_type (type_identifier) @extends))
(superclass (scoped_type_identifier (type_identifier) @extends .) @extends.expr)
(super_interfaces (type_list (type_identifier) @implements))
(super_interfaces (type_list (generic_type (type_identifier) @implements)))
(super_interfaces (type_list (scoped_type_identifier (type_identifier) @implements .) @implements.expr))
(extends_interfaces (type_list (type_identifier) @extends))
(extends_interfaces (type_list (generic_type (type_identifier) @extends)))
(type_identifier) @type
(type_parameter (type_identifier) @tparam)
(local_variable_declaration type: (_) @var.type declarator: (variable_declarator name: (identifier) @var.name))
(local_variable_declaration type: (type_identifier) @_var (#eq? @_var "var")
  declarator: (variable_declarator name: (identifier) @var.name
                                   value: (object_creation_expression type: (_) @var.type)))
(field_declaration type: (_) @var.type declarator: (variable_declarator name: (identifier) @var.name))
(formal_parameter type: (_) @var.type name: (identifier) @var.name)
(enhanced_for_statement type: (_) @var.type name: (identifier) @var.name)
(resource type: (_) @var.type name: (identifier) @var.name)
(local_variable_declaration type: (type_identifier) @_var (#eq? @_var "var")
  declarator: (variable_declarator name: (identifier) @var.name value: (method_invocation) @var.call))
(method_declaration type: (_) @ret.type name: (identifier) @ret.name)
"""

_KOTLIN = r"""
(call_expression . (simple_identifier) @call) @call.expr
(call_expression . (navigation_expression (navigation_suffix (simple_identifier) @call) .) @call.expr)
(callable_reference (simple_identifier) @call .) @call.expr
(delegation_specifier (constructor_invocation (user_type (type_identifier) @extends)))
(delegation_specifier (user_type (type_identifier) @implements))
(user_type (type_identifier) @type)
(type_parameter (type_identifier) @tparam)
(property_declaration (variable_declaration (simple_identifier) @var.name (user_type) @var.type))
(property_declaration (variable_declaration (simple_identifier) @var.name .) (call_expression . (simple_identifier) @var.call))
(property_declaration (variable_declaration (simple_identifier) @var.name .) (call_expression . (navigation_expression) @var.call))
(function_declaration (simple_identifier) @ret.name (function_value_parameters) . (user_type) @ret.type)
(parameter (simple_identifier) @var.name (user_type) @var.type)
(class_parameter (simple_identifier) @var.name (user_type) @var.type)
"""

_PYTHON = r"""
(call function: (identifier) @call) @call.expr
(call function: (attribute attribute: (identifier) @call) @call.expr)
(class_definition superclasses: (argument_list (identifier) @extends))
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @extends) @extends.expr))
(class_definition superclasses: (argument_list (subscript value: (identifier) @extends)))
(type (identifier) @type)
(type (attribute attribute: (identifier) @type) @type.expr)
(type (string (string_content) @type))
(type (generic_type (identifier) @type))
(type (generic_type (type_parameter (type (identifier) @type))))
(type (binary_operator (identifier) @type))
(typed_parameter (identifier) @var.name type: (type) @var.type)
(typed_default_parameter name: (identifier) @var.name type: (type) @var.type)
(assignment left: (identifier) @var.name type: (type) @var.type)
(assignment left: (identifier) @var.name right: (call function: (identifier) @var.call))
(assignment left: (identifier) @var.name right: (call function: (attribute) @var.call))
(function_definition name: (identifier) @ret.name return_type: (type) @ret.type)
(assignment left: (attribute object: (identifier) @_self attribute: (identifier) @field.name)
  type: (type) @field.type (#eq? @_self "self"))
(assignment left: (attribute object: (identifier) @_self attribute: (identifier) @field.name)
  right: (call function: (identifier) @field.call) (#eq? @_self "self"))
(assignment left: (attribute object: (identifier) @_self attribute: (identifier) @field.name)
  right: (call function: (attribute) @field.call) (#eq? @_self "self"))
(assignment left: (attribute object: (identifier) @_self attribute: (identifier) @field.name)
  right: (identifier) @field.from (#eq? @_self "self"))
"""

_JS_COMMON = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (member_expression property: (property_identifier) @call) @call.expr)
(new_expression constructor: (identifier) @new)
(new_expression constructor: (member_expression property: (property_identifier) @new) @new.expr)
(variable_declarator name: (identifier) @var.name value: (new_expression constructor: (identifier) @var.type))
(assignment_expression left: (member_expression object: (this) property: (property_identifier) @field.name)
  right: (new_expression constructor: (identifier) @field.type))
"""

_JS = r"""
(class_heritage (identifier) @extends)
(class_heritage (member_expression property: (property_identifier) @extends) @extends.expr)
"""

_JSX = r"""
(jsx_opening_element name: (identifier) @call)
(jsx_self_closing_element name: (identifier) @call)
"""

_TS = _JS_COMMON + r"""
(extends_clause value: (identifier) @extends)
(extends_clause value: (member_expression property: (property_identifier) @extends) @extends.expr)
(implements_clause (type_identifier) @implements)
(implements_clause (generic_type name: (type_identifier) @implements))
(implements_clause (nested_type_identifier name: (type_identifier) @implements) @implements.expr)
(extends_type_clause (type_identifier) @extends)
(extends_type_clause (generic_type name: (type_identifier) @extends))
(extends_type_clause (nested_type_identifier name: (type_identifier) @extends) @extends.expr)
(type_identifier) @type
(nested_type_identifier name: (type_identifier) @type) @type.expr
(type_parameter name: (type_identifier) @tparam)
(variable_declarator name: (identifier) @var.name type: (type_annotation (_) @var.type))
(required_parameter pattern: (identifier) @var.name type: (type_annotation (_) @var.type))
(optional_parameter pattern: (identifier) @var.name type: (type_annotation (_) @var.type))
(required_parameter (accessibility_modifier) pattern: (identifier) @field.name type: (type_annotation (_) @field.type))
(public_field_definition name: (property_identifier) @var.name type: (type_annotation (_) @var.type))
(public_field_definition name: (property_identifier) @var.name value: (new_expression constructor: (identifier) @var.type))
(variable_declarator name: (identifier) @var.name value: (call_expression function: (_) @var.call))
(variable_declarator name: (identifier) @var.name value: (await_expression (call_expression function: (_) @var.call)))
(function_declaration name: (identifier) @ret.name return_type: (type_annotation (_) @ret.type))
(method_definition name: (property_identifier) @ret.name return_type: (type_annotation (_) @ret.type))
(method_signature name: (property_identifier) @ret.name return_type: (type_annotation (_) @ret.type))
(variable_declarator name: (identifier) @ret.name value: (arrow_function return_type: (type_annotation (_) @ret.type)))
"""

_GO = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (selector_expression field: (field_identifier) @call) @call.expr)
(composite_literal type: (type_identifier) @new)
(composite_literal type: (qualified_type name: (type_identifier) @new) @new.expr)
(field_declaration !name type: (type_identifier) @extends)
(field_declaration !name type: (pointer_type (type_identifier) @extends))
(field_declaration !name type: (qualified_type name: (type_identifier) @extends) @extends.expr)
(interface_type (type_elem (type_identifier) @extends))
(type_identifier) @type
(qualified_type name: (type_identifier) @type) @type.expr
(type_parameter_declaration name: (identifier) @tparam)
(parameter_declaration name: (identifier) @var.name type: (_) @var.type)
(var_spec name: (identifier) @var.name type: (_) @var.type)
(field_declaration name: (field_identifier) @var.name type: (_) @var.type)
(short_var_declaration left: (expression_list . (identifier) @var.name)
  right: (expression_list . (composite_literal type: (_) @var.type)))
(short_var_declaration left: (expression_list . (identifier) @var.name)
  right: (expression_list . (unary_expression operand: (composite_literal type: (_) @var.type))))
(short_var_declaration left: (expression_list . (identifier) @var.name)
  right: (expression_list . (call_expression function: (_) @var.call)))
(function_declaration name: (identifier) @ret.name result: (_) @ret.type)
(method_declaration name: (field_identifier) @ret.name result: (_) @ret.type)
"""

_RUST = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (scoped_identifier name: (identifier) @call) @call.expr)
(call_expression function: (field_expression field: (field_identifier) @call) @call.expr)
(call_expression function: (generic_function function: (identifier) @call) @call.expr)
(call_expression function: (generic_function function: (scoped_identifier name: (identifier) @call)) @call.expr)
(macro_invocation macro: (identifier) @call)
(struct_expression name: (type_identifier) @new)
(struct_expression name: (scoped_type_identifier name: (type_identifier) @new) @new.expr)
(impl_item trait: (type_identifier) @implements)
(impl_item trait: (generic_type type: (type_identifier) @implements))
(impl_item trait: (scoped_type_identifier name: (type_identifier) @implements) @implements.expr)
(trait_item bounds: (trait_bounds (type_identifier) @extends))
(type_identifier) @type
(scoped_type_identifier name: (type_identifier) @type) @type.expr
(type_parameter name: (type_identifier) @tparam)
(let_declaration pattern: (identifier) @var.name type: (_) @var.type)
(let_declaration pattern: (identifier) @var.name value: (call_expression function: (scoped_identifier) @var.call))
(let_declaration pattern: (identifier) @var.name value: (call_expression function: (identifier) @var.call))
(let_declaration pattern: (identifier) @var.name value: (call_expression function: (field_expression) @var.call))
(function_item name: (identifier) @ret.name return_type: (_) @ret.type)
(let_declaration pattern: (identifier) @var.name value: (struct_expression name: (_) @var.type))
(parameter pattern: (identifier) @var.name type: (_) @var.type)
(field_declaration name: (field_identifier) @var.name type: (_) @var.type)
"""

_C_COMMON = r"""
(call_expression function: (identifier) @call) @call.expr
(call_expression function: (field_expression field: (field_identifier) @call) @call.expr)
(type_identifier) @type
(declaration declarator: (function_declarator declarator: (identifier) @decl))
(declaration type: (_) @var.type declarator: (identifier) @var.name)
(declaration type: (_) @var.type declarator: (init_declarator declarator: (identifier) @var.name))
(declaration type: (_) @var.type declarator: (pointer_declarator declarator: (identifier) @var.name))
(declaration type: (_) @var.type declarator: (init_declarator declarator: (pointer_declarator declarator: (identifier) @var.name)))
(parameter_declaration type: (_) @var.type declarator: (identifier) @var.name)
(parameter_declaration type: (_) @var.type declarator: (pointer_declarator declarator: (identifier) @var.name))
(field_declaration type: (_) @var.type declarator: (field_identifier) @var.name)
(field_declaration type: (_) @var.type declarator: (pointer_declarator declarator: (field_identifier) @var.name))
"""

_CPP = _C_COMMON + r"""
(call_expression function: (qualified_identifier name: (identifier) @call) @call.expr)
(call_expression function: (template_function name: (identifier) @call) @call.expr)
(new_expression type: (type_identifier) @new)
(new_expression type: (qualified_identifier name: (type_identifier) @new) @new.expr)
(new_expression type: (template_type name: (type_identifier) @new))
(base_class_clause (type_identifier) @extends)
(base_class_clause (template_type name: (type_identifier) @extends))
(base_class_clause (qualified_identifier name: (type_identifier) @extends) @extends.expr)
(qualified_identifier name: (type_identifier) @type) @type.expr
(type_parameter_declaration (type_identifier) @tparam)
(field_declaration declarator: (function_declarator declarator: (field_identifier) @decl))
(parameter_declaration type: (_) @var.type declarator: (reference_declarator (identifier) @var.name))
(declaration type: (placeholder_type_specifier) declarator: (init_declarator declarator: (identifier) @var.name
  value: (new_expression type: (_) @var.type)))
"""

_CSHARP = r"""
(invocation_expression function: (identifier) @call) @call.expr
(invocation_expression function: (generic_name (identifier) @call)) @call.expr
(invocation_expression function: (member_access_expression name: (identifier) @call) @call.expr)
(invocation_expression function: (member_access_expression name: (generic_name (identifier) @call)) @call.expr)
(object_creation_expression type: (identifier) @new)
(object_creation_expression type: (generic_name (identifier) @new))
(object_creation_expression type: (qualified_name name: (identifier) @new) @new.expr)
(base_list (identifier) @extends)
(base_list (generic_name (identifier) @extends))
(base_list (qualified_name name: (identifier) @extends) @extends.expr)
(_ type: (identifier) @type)
(_ returns: (identifier) @type)
(_ type: (generic_name (identifier) @type))
(_ returns: (generic_name (identifier) @type))
(type_argument_list (identifier) @type)
(type_argument_list (generic_name (identifier) @type))
(_ type: (qualified_name name: (identifier) @type) @type.expr)
(_ type: (nullable_type type: (identifier) @type))
(_ type: (array_type type: (identifier) @type))
(type_parameter name: (identifier) @tparam)
(variable_declaration type: (_) @var.type (variable_declarator name: (identifier) @var.name))
(variable_declaration type: (implicit_type) (variable_declarator name: (identifier) @var.name
  (object_creation_expression type: (_) @var.type)))
(parameter type: (_) @var.type name: (identifier) @var.name)
(property_declaration type: (_) @field.type name: (identifier) @field.name)
(variable_declaration type: (implicit_type) (variable_declarator name: (identifier) @var.name
  (invocation_expression function: (_) @var.call)))
(method_declaration returns: (_) @ret.type name: (identifier) @ret.name)
"""

_RUBY = r"""
(call method: (identifier) @call) @call.expr
(body_statement (identifier) @bare)
(binary left: (identifier) @bare)
(binary right: (identifier) @bare)
(interpolation (identifier) @bare)
(argument_list (identifier) @bare)
(array (identifier) @bare)
(parenthesized_statements (identifier) @bare)
(assignment right: (identifier) @bare)
(if condition: (identifier) @bare)
(unless condition: (identifier) @bare)
(assignment left: (identifier) @local)
(operator_assignment left: (identifier) @local)
(method_parameters (identifier) @local)
(lambda_parameters (identifier) @local)
(block_parameters (identifier) @local)
(optional_parameter name: (identifier) @local)
(keyword_parameter name: (identifier) @local)
(splat_parameter name: (identifier) @local)
(super) @super
(superclass (constant) @extends)
(superclass (scope_resolution name: (constant) @extends) @extends.expr)
(call method: (identifier) @_inc (#match? @_inc "^(include|extend|prepend)$")
  arguments: (argument_list (constant) @implements))
(call method: (identifier) @_inc (#match? @_inc "^(include|extend|prepend)$")
  arguments: (argument_list (scope_resolution name: (constant) @implements) @implements.expr))
(scope_resolution name: (constant) @type) @type.expr
(assignment left: (identifier) @var.name right: (call receiver: (constant) @var.type method: (identifier) @_new
  (#eq? @_new "new")))
(assignment left: (identifier) @var.name right: (call receiver: (scope_resolution) @var.type method: (identifier) @_new
  (#eq? @_new "new")))
(assignment left: (instance_variable) @field.name right: (call receiver: (constant) @field.type
  method: (identifier) @_new (#eq? @_new "new")))
(assignment left: (instance_variable) @field.name right: (call receiver: (scope_resolution) @field.type
  method: (identifier) @_new (#eq? @_new "new")))
"""

_PHP = r"""
(function_call_expression function: (name) @call) @call.expr
(function_call_expression function: (qualified_name (name) @call .) @call.expr)
(member_call_expression name: (name) @call) @call.expr
(nullsafe_member_call_expression name: (name) @call) @call.expr
(scoped_call_expression name: (name) @call) @call.expr
(object_creation_expression (name) @new)
(object_creation_expression (qualified_name (name) @new .) @new.expr)
(base_clause (name) @extends)
(base_clause (qualified_name (name) @extends .) @extends.expr)
(class_interface_clause (name) @implements)
(class_interface_clause (qualified_name (name) @implements .) @implements.expr)
(use_declaration (name) @implements)
(named_type (name) @type)
(named_type (qualified_name (name) @type .) @type.expr)
(simple_parameter type: (_) @var.type name: (variable_name (name) @var.name))
(property_promotion_parameter type: (_) @field.type name: (variable_name (name) @field.name))
(property_declaration type: (_) @var.type (property_element name: (variable_name (name) @var.name)))
(assignment_expression left: (variable_name (name) @var.name)
  right: (object_creation_expression (name) @var.type))
(assignment_expression left: (variable_name (name) @var.name)
  right: (object_creation_expression (qualified_name) @var.type))
(assignment_expression left: (member_access_expression object: (variable_name (name) @_this) name: (name) @field.name)
  right: (object_creation_expression (name) @field.type) (#eq? @_this "this"))
(assignment_expression left: (variable_name (name) @var.name)
  right: [(function_call_expression function: (_) @var.call) (member_call_expression) @var.call
          (scoped_call_expression) @var.call])
(method_declaration name: (name) @ret.name return_type: (_) @ret.type)
(function_definition name: (name) @ret.name return_type: (_) @ret.type)
"""

PATTERNS: dict[str, str] = {
    "java": _JAVA,
    "kotlin": _KOTLIN,
    "python": _PYTHON,
    "javascript": _JS_COMMON + _JS + _JSX,
    "typescript": _TS,
    "tsx": _TS + _JSX,
    "go": _GO,
    "rust": _RUST,
    "c": _C_COMMON,
    "cpp": _CPP,
    "csharp": _CSHARP,
    "ruby": _RUBY,
    "php": _PHP,
}
