//! Tokenizer and Pratt parser for the Python-like text PyTorch prints.
//!
//! All three guard syntaxes (sympy `str`, guard code, sympy `srepr`) are Python expressions;
//! they differ only in their vocabulary of functions. This module parses the shared grammar into
//! a small syntax tree ([`Node`]) with byte spans; `syntax.rs` gives each syntax's functions
//! their meaning. Operator precedence is Python's.

use crate::error::ParseError;

/// Byte range in the input.
pub type Span = (usize, usize);

/// A parsed Python expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// An integer literal.
    Int(i128),
    /// A float literal, as written.
    Float(String),
    /// A string literal's contents.
    Str(String),
    /// A bare or dotted name: `s0`, `oo`, `True`, `math.trunc`.
    Name(String),
    /// A size source such as `L['x'].size()[2]` (whitespace removed).
    Source(String),
    /// A call `func(args, name=kwarg)`.
    Call {
        /// The called name (dotted: `torch.sym_max`).
        func: String,
        /// Where the called name is.
        func_span: Span,
        /// Positional arguments.
        args: Vec<Spanned>,
        /// Keyword arguments, in order.
        kwargs: Vec<(String, Spanned)>,
    },
    /// `(a, b)`.
    Tuple(Vec<Spanned>),
    /// `-a`, `+a`, `~a`.
    Unary(UnOp, Box<Spanned>),
    /// `a op b`.
    Binary(BinOp, Box<Spanned>, Box<Spanned>),
    /// `a < b <= c`: operands and the operators between them.
    Compare(Vec<Spanned>, Vec<crate::types::CmpOp>),
    /// `a and b` (true) or `a or b` (false), flattened.
    BoolOp(bool /* is_and */, Vec<Spanned>),
    /// `not a`.
    Not(Box<Spanned>),
    /// `a if cond else b`: the condition, `a`, then `b`.
    IfElse(Box<Spanned>, Box<Spanned>, Box<Spanned>),
    /// A parenthesized comparison: `(a == b) == c` is not a chain.
    Paren(Box<Spanned>),
}

/// A node with its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned {
    /// The node.
    pub node: Node,
    /// Where it is in the input.
    pub span: Span,
}

/// A unary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    /// `-`.
    Neg,
    /// `+`.
    Pos,
    /// `~`.
    Invert,
}

/// A binary operator, with Python's meaning (`//` and `%` floor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    TrueDiv,
    /// `//`.
    FloorDiv,
    /// `%`.
    Mod,
    /// `**`.
    Pow,
    /// `&`.
    BitAnd,
    /// `|`.
    BitOr,
    /// `^`.
    BitXor,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i128),
    Float(String),
    Str(String),
    Ident(String),
    Op(&'static str),
    End,
}

const OPS: [&str; 25] = [
    "**", "//", "==", "!=", "<=", ">=", "<<", ">>", "+", "-", "*", "/", "%", "<", ">", "(", ")",
    "[", "]", ",", ".", "=", "&", "|", "~",
];

struct Lexer<'a> {
    src: &'a str,
    toks: Vec<(Tok, Span)>,
}

impl<'a> Lexer<'a> {
    fn run(src: &'a str) -> Result<Vec<(Tok, Span)>, ParseError> {
        let mut lx = Lexer {
            src,
            toks: Vec::new(),
        };
        let b = src.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_whitespace() || c == b'\\' {
                i += 1;
                continue;
            }
            let start = i;
            if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
                i = lx.number(i)?;
                continue;
            }
            if c.is_ascii_alphabetic() || c == b'_' {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                lx.toks
                    .push((Tok::Ident(src[start..i].to_string()), (start, i)));
                continue;
            }
            if c == b'\'' || c == b'"' {
                i += 1;
                while i < b.len() && b[i] != c {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= b.len() {
                    return Err(
                        ParseError::new("unterminated string literal", src, start, 1).with_help(
                            "close the quote; the text may have been cut when it was copied",
                        ),
                    );
                }
                i += 1;
                lx.toks
                    .push((Tok::Str(src[start + 1..i - 1].to_string()), (start, i)));
                continue;
            }
            let rest = &src[i..];
            if let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) {
                i += op.len();
                lx.toks.push((Tok::Op(op), (start, i)));
                continue;
            }
            let ch = rest.chars().next().unwrap_or('?');
            return Err(ParseError::new(
                format!("unexpected character `{ch}`"),
                src,
                start,
                ch.len_utf8(),
            )
            .with_help("guards are Python expressions over sizes such as L['x'].size()[2]"));
        }
        lx.toks.push((Tok::End, (src.len(), src.len())));
        Ok(lx.toks)
    }

    fn number(&mut self, start: usize) -> Result<usize, ParseError> {
        let b = self.src.as_bytes();
        let mut i = start;
        let mut is_float = false;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
        if i < b.len()
            && b[i] == b'.'
            && !b
                .get(i + 1)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        {
            is_float = true;
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            let mut j = i + 1;
            if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                j += 1;
            }
            if j < b.len() && b[j].is_ascii_digit() {
                is_float = true;
                i = j;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
        }
        let text: String = self.src[start..i].chars().filter(|c| *c != '_').collect();
        if is_float {
            self.toks.push((Tok::Float(text), (start, i)));
        } else {
            let v = text.parse::<i128>().map_err(|_| {
                ParseError::new(
                    "integer literal does not fit in 128 bits",
                    self.src,
                    start,
                    i - start,
                )
                .with_help("sizes are int64; a literal this large cannot come from PyTorch")
            })?;
            self.toks.push((Tok::Int(v), (start, i)));
        }
        Ok(i)
    }
}

/// Nesting limit: deeper input is rejected instead of overflowing the stack.
const MAX_DEPTH: usize = 100;

struct Parser<'a> {
    src: &'a str,
    toks: Vec<(Tok, Span)>,
    pos: usize,
    depth: usize,
}

/// Parses one Python expression covering the whole of `src`.
pub fn parse(src: &str) -> Result<Spanned, ParseError> {
    let toks = Lexer::run(src)?;
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
    };
    if matches!(p.peek(), Tok::End) {
        return Err(ParseError::new("empty expression", src, 0, 0));
    }
    let e = p.expr(0)?;
    if !matches!(p.peek(), Tok::End) {
        let (s, e2) = p.span();
        return Err(p
            .err_at(
                format!("unexpected {} after a complete expression", p.describe()),
                s,
                e2 - s,
            )
            .with_help("check for a missing operator or an unbalanced parenthesis"));
    }
    Ok(e)
}

/// Binding powers (Python): if-else 1, or 2, and 3, not 4, comparisons 5, | 6, ^ 7, & 8,
/// + - 10, * / // % 11, unary 12, ** 13.
fn infix_bp(t: &Tok) -> Option<(u8, u8)> {
    Some(match t {
        Tok::Ident(s) if s == "if" => (1, 2),
        Tok::Ident(s) if s == "or" => (2, 3),
        Tok::Ident(s) if s == "and" => (3, 4),
        Tok::Op("==" | "!=" | "<" | "<=" | ">" | ">=") => (5, 6),
        Tok::Ident(s) if s == "in" || s == "is" => (5, 6),
        Tok::Op("|") => (6, 7),
        Tok::Op("^") => (7, 8),
        Tok::Op("&") => (8, 9),
        Tok::Op("+" | "-") => (10, 11),
        Tok::Op("*" | "/" | "//" | "%") => (11, 12),
        Tok::Op("**") => (14, 13), // right associative, tighter than unary on its left
        _ => return None,
    })
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }

    fn span(&self) -> Span {
        self.toks[self.pos].1
    }

    fn bump(&mut self) -> (Tok, Span) {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn err_at(&self, msg: impl Into<String>, offset: usize, len: usize) -> ParseError {
        ParseError::new(msg, self.src, offset, len)
    }

    fn describe(&self) -> String {
        match self.peek() {
            Tok::End => "end of input".into(),
            Tok::Int(v) => format!("number `{v}`"),
            Tok::Float(v) => format!("number `{v}`"),
            Tok::Str(s) => format!("string '{s}'"),
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Op(o) => format!("`{o}`"),
        }
    }

    fn expect(&mut self, op: &'static str, context: &str) -> Result<Span, ParseError> {
        if self.peek() == &Tok::Op(op) {
            return Ok(self.bump().1);
        }
        let (s, e) = self.span();
        Err(self.err_at(
            format!("expected `{op}` {context}, found {}", self.describe()),
            s,
            e - s,
        ))
    }

    fn expr(&mut self, min_bp: u8) -> Result<Spanned, ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let (s, _) = self.span();
            return Err(self.err_at(
                format!("expression nested deeper than {MAX_DEPTH} levels"),
                s,
                1,
            ));
        }
        let r = self.expr_inner(min_bp);
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self, min_bp: u8) -> Result<Spanned, ParseError> {
        let lhs = self.prefix()?;
        // Each operator applied in this loop deepens the tree by one level (a + b + c is
        // ((a + b) + c)); count it so that no tree is deeper than MAX_DEPTH.
        let entry_depth = self.depth;
        let r = self.infix_loop(lhs, min_bp);
        self.depth = entry_depth;
        r
    }

    fn infix_loop(&mut self, mut lhs: Spanned, min_bp: u8) -> Result<Spanned, ParseError> {
        loop {
            let t = self.peek().clone();
            let Some((lbp, rbp)) = infix_bp(&t) else {
                break;
            };
            if lbp < min_bp {
                break;
            }
            let (os, oe) = self.bump().1;
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(self.err_at(
                    format!("expression nested deeper than {MAX_DEPTH} levels"),
                    os,
                    oe - os,
                ));
            }
            lhs = match t {
                Tok::Ident(ref s) if s == "if" => {
                    let cond = self.expr(rbp)?;
                    match self.peek() {
                        Tok::Ident(s) if s == "else" => {
                            self.bump();
                        }
                        _ => {
                            let (s, e) = self.span();
                            return Err(self.err_at(
                                "expected `else` in conditional expression",
                                s,
                                e - s,
                            ));
                        }
                    }
                    let other = self.expr(rbp)?;
                    let span = (lhs.span.0, other.span.1);
                    Spanned {
                        node: Node::IfElse(Box::new(cond), Box::new(lhs), Box::new(other)),
                        span,
                    }
                }
                Tok::Ident(ref s) if s == "in" || s == "is" => {
                    return Err(self.err_at(
                        format!("`{s}` is not supported in guards"),
                        os,
                        oe - os,
                    ));
                }
                Tok::Ident(ref s) => {
                    let is_and = s == "and";
                    let rhs = self.expr(rbp)?;
                    let span = (lhs.span.0, rhs.span.1);
                    let mut items = match lhs.node {
                        Node::BoolOp(a, items) if a == is_and => items,
                        _ => vec![lhs],
                    };
                    items.push(rhs);
                    Spanned {
                        node: Node::BoolOp(is_and, items),
                        span,
                    }
                }
                Tok::Op(op @ ("==" | "!=" | "<" | "<=" | ">" | ">=")) => {
                    let rhs = self.expr(rbp)?;
                    let span = (lhs.span.0, rhs.span.1);
                    let cmp = cmp_of(op);
                    // Python chains comparisons: a < b <= c means a < b and b <= c. A
                    // parenthesized comparison on the left is not a chain.
                    let (mut operands, mut ops) = match lhs.node {
                        Node::Compare(o, p) => (o, p),
                        other => (
                            vec![Spanned {
                                node: other,
                                span: lhs.span,
                            }],
                            vec![],
                        ),
                    };
                    operands.push(rhs);
                    ops.push(cmp);
                    Spanned {
                        node: Node::Compare(operands, ops),
                        span,
                    }
                }
                Tok::Op(op) => {
                    let rhs = if op == "**" {
                        self.unary_operand()?
                    } else {
                        self.expr(rbp)?
                    };
                    let span = (lhs.span.0, rhs.span.1);
                    let b = match op {
                        "+" => BinOp::Add,
                        "-" => BinOp::Sub,
                        "*" => BinOp::Mul,
                        "/" => BinOp::TrueDiv,
                        "//" => BinOp::FloorDiv,
                        "%" => BinOp::Mod,
                        "**" => BinOp::Pow,
                        "&" => BinOp::BitAnd,
                        "|" => BinOp::BitOr,
                        _ => BinOp::BitXor,
                    };
                    Spanned {
                        node: Node::Binary(b, Box::new(lhs), Box::new(rhs)),
                        span,
                    }
                }
                _ => unreachable!("infix_bp only accepts operators"),
            };
        }
        Ok(lhs)
    }

    /// The right operand of `**`: a unary expression (`2**-1`) binding tighter than `**`'s left.
    fn unary_operand(&mut self) -> Result<Spanned, ParseError> {
        self.expr(13)
    }

    fn prefix(&mut self) -> Result<Spanned, ParseError> {
        let (t, (s, e)) = self.bump();
        match t {
            Tok::Int(v) => Ok(Spanned {
                node: Node::Int(v),
                span: (s, e),
            }),
            Tok::Float(v) => Ok(Spanned {
                node: Node::Float(v),
                span: (s, e),
            }),
            Tok::Str(v) => Ok(Spanned {
                node: Node::Str(v),
                span: (s, e),
            }),
            Tok::Op(op @ ("-" | "+" | "~")) => {
                let inner = self.expr(12)?;
                let span = (s, inner.span.1);
                let u = match op {
                    "-" => UnOp::Neg,
                    "+" => UnOp::Pos,
                    _ => UnOp::Invert,
                };
                Ok(Spanned {
                    node: Node::Unary(u, Box::new(inner)),
                    span,
                })
            }
            Tok::Ident(ref n) if n == "not" => {
                let inner = self.expr(4)?;
                let span = (s, inner.span.1);
                Ok(Spanned {
                    node: Node::Not(Box::new(inner)),
                    span,
                })
            }
            Tok::Op("(") => {
                if self.peek() == &Tok::Op(")") {
                    let (_, e2) = self.bump().1;
                    return Ok(Spanned {
                        node: Node::Tuple(vec![]),
                        span: (s, e2),
                    });
                }
                let first = self.expr(0)?;
                if self.peek() == &Tok::Op(",") {
                    let mut items = vec![first];
                    while self.peek() == &Tok::Op(",") {
                        self.bump();
                        if self.peek() == &Tok::Op(")") {
                            break;
                        }
                        items.push(self.expr(0)?);
                    }
                    let (_, e2) = self.expect(")", "to close the tuple")?;
                    return Ok(Spanned {
                        node: Node::Tuple(items),
                        span: (s, e2),
                    });
                }
                let (_, e2) = self.expect(")", "to close the parenthesis")?;
                let node = match first.node {
                    Node::Compare(..) => Node::Paren(Box::new(first)),
                    other => other,
                };
                Ok(Spanned {
                    node,
                    span: (s, e2),
                })
            }
            Tok::Ident(name) => self.name_or_call(name, (s, e)),
            Tok::End => Err(self
                .err_at("unexpected end of input", s, 0)
                .with_help("the expression is incomplete")),
            Tok::Op(op) => Err(self.err_at(format!("unexpected `{op}`"), s, e - s)),
        }
    }

    /// `s0`, `math.trunc(...)`, `Mod(...)`, `L['x'].size()[2]`, `x.size()[2]`.
    fn name_or_call(&mut self, first: String, first_span: Span) -> Result<Spanned, ParseError> {
        let start = first_span.0;
        let mut name = first;
        let mut end = first_span.1;
        // Dotted name.
        while self.peek() == &Tok::Op(".") {
            if let Tok::Ident(next) = &self.toks[self.pos + 1].0 {
                name = format!("{name}.{next}");
                self.bump();
                end = self.bump().1 .1;
            } else {
                break;
            }
        }
        let method = name.rsplit('.').next().unwrap_or("");
        let is_tensor_method = name.contains('.') && TENSOR_METHODS.contains(&method);
        if self.peek() == &Tok::Op("(") && !is_tensor_method {
            self.bump();
            let (args, kwargs, close) = self.call_args()?;
            return Ok(Spanned {
                node: Node::Call {
                    func: name,
                    func_span: (start, end),
                    args,
                    kwargs,
                },
                span: (start, close),
            });
        }
        if self.peek() != &Tok::Op("[") && !is_tensor_method {
            return Ok(Spanned {
                node: Node::Name(name),
                span: (start, end),
            });
        }
        // A source path: subscripts, attributes and argument-free method calls.
        loop {
            match self.peek() {
                Tok::Op("[") => {
                    self.bump();
                    let (t, sp) = self.bump();
                    if !matches!(t, Tok::Int(_) | Tok::Str(_)) {
                        return Err(self.err_at(
                            "expected an index or a quoted name inside `[...]`",
                            sp.0,
                            sp.1 - sp.0,
                        ));
                    }
                    end = self.expect("]", "to close the subscript")?.1;
                }
                Tok::Op(".") => {
                    self.bump();
                    let (t, sp) = self.bump();
                    if !matches!(t, Tok::Ident(_)) {
                        return Err(self.err_at(
                            "expected an attribute name after `.`",
                            sp.0,
                            sp.1 - sp.0,
                        ));
                    }
                    end = sp.1;
                }
                Tok::Op("(") => {
                    self.bump();
                    end = self
                        .expect(
                            ")",
                            "(only argument-free methods such as size() appear in sizes)",
                        )?
                        .1;
                }
                _ => break,
            }
        }
        let text: String = self.src[start..end]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        Ok(Spanned {
            node: Node::Source(text),
            span: (start, end),
        })
    }

    #[allow(clippy::type_complexity)]
    fn call_args(&mut self) -> Result<(Vec<Spanned>, Vec<(String, Spanned)>, usize), ParseError> {
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        loop {
            if self.peek() == &Tok::Op(")") {
                return Ok((args, kwargs, self.bump().1 .1));
            }
            let is_kw =
                matches!(self.peek(), Tok::Ident(_)) && self.toks[self.pos + 1].0 == Tok::Op("=");
            if is_kw {
                let Tok::Ident(k) = self.bump().0 else {
                    unreachable!()
                };
                self.bump();
                kwargs.push((k, self.expr(0)?));
            } else {
                args.push(self.expr(0)?);
            }
            match self.peek() {
                Tok::Op(",") => {
                    self.bump();
                }
                Tok::Op(")") => {}
                _ => {
                    let (s, e) = self.span();
                    return Err(self.err_at(
                        format!(
                            "expected `,` or `)` in the argument list, found {}",
                            self.describe()
                        ),
                        s,
                        e - s,
                    ));
                }
            }
        }
    }
}

/// Methods that are part of a size's source text, not functions.
const TENSOR_METHODS: [&str; 4] = ["size", "stride", "storage_offset", "numel"];

fn cmp_of(op: &str) -> crate::types::CmpOp {
    use crate::types::CmpOp::*;
    match op {
        "==" => Eq,
        "!=" => Ne,
        "<" => Lt,
        "<=" => Le,
        ">" => Gt,
        _ => Ge,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_atoms() {
        let n = parse("L['x'].size()[2]").unwrap();
        assert_eq!(n.node, Node::Source("L['x'].size()[2]".into()));
        let n = parse("L['kwargs']['input_ids'].size()[1]").unwrap();
        assert_eq!(
            n.node,
            Node::Source("L['kwargs']['input_ids'].size()[1]".into())
        );
        let n = parse("x.size()[2]").unwrap();
        assert_eq!(n.node, Node::Source("x.size()[2]".into()));
        let n = parse("L['args'][0].size()[1]").unwrap();
        assert_eq!(n.node, Node::Source("L['args'][0].size()[1]".into()));
    }

    #[test]
    fn precedence_is_pythons() {
        // -x**2 == -(x**2); 2**-1; a + b * c
        let n = parse("-x**2").unwrap();
        assert!(matches!(n.node, Node::Unary(UnOp::Neg, _)));
        assert!(parse("2**-1").is_ok());
        let n = parse("a + b * c").unwrap();
        assert!(matches!(n.node, Node::Binary(BinOp::Add, _, _)));
        let n = parse("not a == b and c").unwrap();
        assert!(matches!(n.node, Node::BoolOp(true, _)));
    }

    #[test]
    fn chained_comparisons() {
        let n = parse("2 <= x <= 10").unwrap();
        match n.node {
            Node::Compare(o, p) => {
                assert_eq!(o.len(), 3);
                assert_eq!(p.len(), 2);
            }
            other => panic!("{other:?}"),
        }
        // Parenthesized comparisons are not chained.
        let n = parse("(a == b) == c").unwrap();
        match n.node {
            Node::Compare(o, _) => {
                assert_eq!(o.len(), 2);
                assert!(matches!(o[0].node, Node::Paren(_)));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_point_at_the_problem() {
        let e = parse("(x + 1").unwrap_err();
        assert_eq!(e.offset, 6);
        let e = parse("x + * 2").unwrap_err();
        assert_eq!(e.offset, 4);
        let e = parse("x $ 2").unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(parse("").is_err());
        assert!(parse("99999999999999999999999999999999999999999999").is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let s = "(".repeat(10_000) + "1" + &")".repeat(10_000);
        assert!(parse(&s).is_err());
        let s = "-".repeat(10_000) + "1";
        assert!(parse(&s).is_err());
        let s = vec!["x"; 10_000].join(" + ");
        assert!(parse(&s).is_err());
        let s = vec!["x"; 50].join(" + ");
        assert!(parse(&s).is_ok());
    }
}
