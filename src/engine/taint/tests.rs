use super::*;

fn taint() -> &'static Taint {
    Taint::bundled().unwrap_or_else(|e| panic!("the bundled taint table: {e}"))
}

/// The flows of `code` as `(sink, line)`, and their traces.
fn flows(path: &str, code: &str) -> Vec<(String, u32, String)> {
    let syntax = parse(path, code, &Limits::default()).unwrap_or_else(|e| panic!("{path}: {e}"));
    taint()
        .flows(path, &syntax)
        .into_iter()
        .map(|f| (f.sink.clone(), f.line, f.trace()))
        .collect()
}

fn sinks(path: &str, code: &str) -> Vec<(String, u32)> {
    flows(path, code)
        .into_iter()
        .map(|(s, l, _)| (s, l))
        .collect()
}

#[test]
fn a_file_of_many_sinks_is_traced_within_its_budget_and_says_what_was_cut() {
    // One request value, then more sinks of it than the file's budget
    // pays full traces for.
    let mut code = String::from(
        "import os\nfrom flask import request\n\ndef f():\n    s = request.args['c']\n",
    );
    for _ in 0..400 {
        code.push_str("    os.system(s)\n");
    }
    let syntax = parse("many.py", &code, &Limits::default()).unwrap();
    let mut scopes = Scopes {
        file_budget: 2 * LEAST_BUDGET * 10,
        ..Scopes::default()
    };
    let found = taint().flows_in("many.py", &syntax, &mut scopes);
    // The first sinks are traced; each later one walks LEAST_BUDGET nodes
    // at most, here enough for a source two lines up.
    assert_eq!(found.first().map(|f| f.line), Some(6), "{found:?}");
    assert!(
        scopes.spent <= scopes.file_budget + 400 * (LEAST_BUDGET + 64),
        "walked {} nodes",
        scopes.spent
    );
    // A value traced from far away is cut once the budget is spent.
    let mut far = String::from(
        "import os\nfrom flask import request\n\ndef f():\n    s0 = request.args['c']\n",
    );
    for i in 1..200 {
        far.push_str(&format!("    s{i} = s{} + 'a'\n", i - 1));
    }
    for _ in 0..50 {
        far.push_str("    os.system(s199)\n");
    }
    let syntax = parse("far.py", &far, &Limits::default()).unwrap();
    let mut scopes = Scopes {
        file_budget: 20_000,
        ..Scopes::default()
    };
    let found = taint().flows_in("far.py", &syntax, &mut scopes);
    assert!(
        scopes.cut_short() > 0,
        "nothing cut: {} walked",
        scopes.spent
    );
    assert!(
        found.len() < 50,
        "{} of 50 sinks traced past the budget",
        found.len()
    );
    assert!(scopes.spent <= 20_000 + 50 * (LEAST_BUDGET + 64));
    // The same file with the whole budget: every sink is traced.
    let found = taint().flows("far.py", &syntax);
    assert_eq!(found.len(), 50);
}

#[test]
fn the_bundled_table_reads_and_its_samples_hold() {
    let t = taint();
    assert!(t.table().sinks.len() >= 10);
    assert!(t.covers("php") && t.covers("python") && !t.covers("rust"));
}

#[test]
fn a_trace_names_the_source_each_assignment_and_the_sink() {
    let code = "<?php\n$page = $_GET['page'];\n$file = 'pages/' . $page;\ninclude($file);\n";
    let found = flows("fi.php", code);
    assert_eq!(found.len(), 1, "{found:?}");
    let (sink, line, trace) = &found[0];
    assert_eq!((sink.as_str(), *line), ("include/php", 4));
    assert!(
        trace.starts_with("line 2: an HTTP request: `$_GET`"),
        "{trace}"
    );
    assert!(trace.contains("line 2: `$page` is set from it"), "{trace}");
    assert!(trace.contains("line 3: `$file` is set from it"), "{trace}");
    assert!(
        trace.ends_with("line 4: reaches `include` (file included from a request value)"),
        "{trace}"
    );
}

#[test]
fn an_interpolated_string_carries_its_variables() {
    let code = "<?php\n$id = $_REQUEST['id'];\n$msg = \"<b>{$id}</b>\";\necho $msg;\n";
    assert_eq!(sinks("x.php", code), [("xss/php-echo".to_string(), 4)]);
    let py = "def v():\n    n = request.args['n']\n    return HttpResponse(f'<p>{n}</p>')\n";
    assert_eq!(sinks("v.py", py), [("xss/python-response".to_string(), 3)]);
    let js =
        "app.get('/', (req, res) => {\n  const n = req.query.n;\n  res.send(`<p>${n}</p>`);\n});\n";
    assert_eq!(sinks("v.js", js), [("xss/js-response".to_string(), 3)]);
}

#[test]
fn a_sanitizer_cleans_its_own_class_only() {
    // HTML escaping does not make a path safe.
    let code = "<?php\n$f = htmlspecialchars($_GET['f']);\necho $f;\nreadfile($f);\n";
    assert_eq!(sinks("s.php", code), [("path/php-file".to_string(), 4)]);
    // A number is safe everywhere.
    let num = "<?php\n$n = intval($_GET['n']);\necho $n;\nreadfile($n);\n";
    assert!(sinks("n.php", num).is_empty());
}

#[test]
fn a_later_sanitized_assignment_replaces_the_value_and_one_in_a_branch_does_not() {
    let replaced = "<?php\n$n = $_GET['n'];\n$n = htmlspecialchars($n);\necho $n;\n";
    assert!(sinks("r.php", replaced).is_empty());
    let branch =
        "<?php\n$n = $_GET['n'];\nif ($strict) {\n  $n = htmlspecialchars($n);\n}\necho $n;\n";
    assert_eq!(sinks("b.php", branch), [("xss/php-echo".to_string(), 6)]);
    let added = "<?php\n$html = '<p>';\n$html .= $_POST['m'];\n$html .= '</p>';\necho $html;\n";
    assert_eq!(sinks("a.php", added), [("xss/php-echo".to_string(), 5)]);
}

#[test]
fn a_plain_parameter_ends_the_trace_and_a_framework_parameter_is_a_source() {
    let plain = "class A {\n  void go(HttpServletResponse r, String to) throws Exception {\n    r.sendRedirect(to);\n  }\n}\n";
    assert!(sinks("A.java", plain).is_empty());
    let spring = "class A {\n  void go(HttpServletResponse r, @RequestParam String to) throws Exception {\n    r.sendRedirect(to);\n  }\n}\n";
    assert_eq!(sinks("A.java", spring), [("redirect/java".to_string(), 3)]);
    let flask = "@app.route('/files/<name>')\ndef f(name):\n    return send_file(name)\n";
    let found = flows("f.py", flask);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].2.starts_with("line 1: a route parameter: `name`"),
        "{}",
        found[0].2
    );
}

#[test]
fn a_fixed_path_or_host_before_the_value_is_no_redirect() {
    let cases = [
        (
            "r.py",
            "def g():\n    return redirect('/items/%s' % request.args['i'])\n",
            false,
        ),
        (
            "r.py",
            "def g():\n    return redirect('//evil' + request.args['i'])\n",
            true,
        ),
        (
            "r.py",
            "def g():\n    return redirect(request.args['next'])\n",
            true,
        ),
        (
            "s.py",
            "def g():\n    return requests.get(f'https://api.example.org/{request.args[\"i\"]}')\n",
            false,
        ),
        (
            "s.py",
            "def g():\n    return requests.get(f'https://{request.args[\"h\"]}/x')\n",
            true,
        ),
        (
            "h.php",
            "<?php\nheader('Location: ' . $_GET['to']);\n",
            true,
        ),
        (
            "h.php",
            "<?php\nheader('Location: /index.php?p=' . $_GET['to']);\n",
            false,
        ),
    ];
    for (path, code, reported) in cases {
        assert_eq!(!sinks(path, code).is_empty(), reported, "{code}");
    }
}

#[test]
fn values_from_other_sources_are_not_web_risks() {
    let argv = "import sys\ndef g():\n    return redirect(sys.argv[1])\n";
    assert!(sinks("a.py", argv).is_empty());
}

#[test]
fn loops_containers_and_tuples_pass_values_on() {
    let loop_ = "def g():\n    for u in request.args.getlist('u'):\n        requests.get(u)\n";
    assert_eq!(sinks("l.py", loop_), [("ssrf/python".to_string(), 3)]);
    let container = "<?php\n$a = [];\n$a['f'] = $_GET['f'];\nreadfile($a['f']);\n";
    assert_eq!(
        sinks("c.php", container),
        [("path/php-file".to_string(), 4)]
    );
    let go = "package a\nfunc h(w http.ResponseWriter, r *http.Request) {\n\tu, ok := r.URL.Query()[\"u\"], true\n\t_ = ok\n\thttp.Get(u)\n}\n";
    assert_eq!(sinks("a.go", go), [("ssrf/go".to_string(), 5)]);
}

#[test]
fn a_value_of_another_function_is_not_followed() {
    let code = "<?php\nfunction a() { $f = $_GET['f']; }\nfunction b($f) { readfile($f); }\n";
    assert!(sinks("o.php", code).is_empty());
}

#[test]
fn a_long_chain_stays_within_the_budget() {
    let mut code = String::from("<?php\n$v0 = $_GET['x'];\n");
    for i in 1..2_000 {
        code.push_str(&format!("$v{i} = $v{} . 'a';\n", i - 1));
    }
    code.push_str("echo $v1999;\n");
    // The source is more values away than one trace follows: nothing is
    // reported, and the walk ends.
    assert!(sinks("long.php", &code).is_empty());
    let mut near = String::from("<?php\n$v0 = $_GET['x'];\n");
    for i in 1..20 {
        near.push_str(&format!("$v{i} = $v{} . 'a';\n", i - 1));
    }
    near.push_str("echo $v19;\n");
    assert_eq!(sinks("near.php", &near), [("xss/php-echo".to_string(), 22)]);
}

#[test]
fn a_sample_that_fails_names_the_sink() {
    let sources = SourceTable::bundled().unwrap_or_else(|e| panic!("{e}"));
    let text = table::TABLE.replace(
        "$to = $_GET['redirect'];\nheader(\"Location: \" . $to);",
        "$to = 'fixed';\nheader(\"Location: \" . $to);",
    );
    assert_ne!(text, table::TABLE, "the sample to break is in the table");
    let e = Taint::parse("t.toml", &text, sources)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("sink redirect/php-header: example is not reported"),
        "{e}"
    );
    let no_class = "[all]\nsanitizers = []\n[class.xss]\ncwe = 79\nseverity = \"high\"\ntitle = \"t\"\nmessage = \"m\"\nsources = [\"an HTTP request\"]\n[[sink]]\nid = \"nope/x\"\nlanguages = [\"php\"]\ncalls = [\"echo\"]\nexamples = [{ file = \"a.php\", code = \"<?php echo $_GET['a'];\" }]\n";
    let e = Taint::parse("t.toml", no_class, sources)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("t.toml: sink nope/x: its class \"nope\""), "{e}");
}

#[test]
fn a_string_is_html_when_it_holds_an_html_element() {
    for (text, html) in [
        ("<p>", true),
        ("</div>", true),
        ("<a href=", true),
        ("x <br/>", true),
        ("<Request [", false),
        ("a < b", false),
        ("<pre", true),
        ("<presence>", false),
        ("<", false),
    ] {
        assert_eq!(has_html_element(text), html, "{text}");
    }
}

#[test]
fn html_built_from_a_request_value_is_one_finding_a_line() {
    // The echo and the string it prints are one sink.
    let code = "<?php\necho '<p>' . $_GET['m'] . '</p>';\n";
    assert_eq!(sinks("e.php", code), [("xss/php-echo".to_string(), 2)]);
    let go = "package a\nfunc h(w http.ResponseWriter, r *http.Request) {\n\tname := r.FormValue(\"n\")\n\tpage := \"<b>\" + name + \"</b>\"\n\t_ = page\n}\n";
    assert_eq!(sinks("a.go", go), [("xss/html-string".to_string(), 4)]);
}

#[test]
fn a_file_is_parsed_for_taint_only_with_a_line_that_may_hold_a_sink() {
    let t = taint();
    assert!(t.may_hold("php", "$h .= '<p>' . $x;"));
    assert!(t.may_hold("php", "include($page);"));
    assert!(t.may_hold("python", "r = requests.get(u)"));
    assert!(!t.may_hold("php", "$a = $b + 1;"));
    assert!(!t.may_hold("rust", "include!(\"x\")"));
}

#[test]
fn a_builder_takes_in_what_is_appended_and_a_template_of_markup_is_html() {
    let java = r#"class A {
  ResponseEntity<String> get(@RequestParam Map<String, String> params) {
    String page = "<div>%s</div>";
    StringBuilder out = new StringBuilder();
    for (Map.Entry<String, String> e : params.entrySet()) {
      out.append(String.format(page, e.getValue()));
    }
    return new ResponseEntity<String>(out.toString(), HttpStatus.OK);
  }
}
"#;
    let found = flows("A.java", java);
    assert_eq!(
        found
            .iter()
            .map(|(s, l, _)| (s.as_str(), *l))
            .collect::<Vec<_>>(),
        [("xss/html-string", 6)],
        "{found:?}"
    );
    let py = "def v():\n    t = '<b>{}</b>'\n    return t.format(request.args['n'])\n";
    assert_eq!(sinks("v.py", py), [("xss/html-string".to_string(), 3)]);
    let plain = "def v():\n    return '{} items'.format(request.args['n'])\n";
    assert!(sinks("v.py", plain).is_empty());
    let js = "app.get('/', (req, res) => {\n  const parts = [];\n  parts.push(req.query.q);\n  res.send(parts.join(','));\n});\n";
    assert_eq!(sinks("a.js", js), [("xss/js-response".to_string(), 4)]);
}

#[test]
fn a_string_over_several_lines_is_flagged_where_the_source_is() {
    let code =
        "<?php\n$page .= \"\n<div>\n  <p>Agent: {$_SERVER['HTTP_USER_AGENT']}</p>\n</div>\";\n";
    let found = flows("m.php", code);
    assert_eq!(
        found
            .iter()
            .map(|(s, l, _)| (s.as_str(), *l))
            .collect::<Vec<_>>(),
        [("xss/html-string", 4)],
        "{found:?}"
    );
}

fn status(path: &str, code: &str, line: u32) -> LineStatus {
    let syntax = parse(path, code, &Limits::default()).unwrap_or_else(|e| panic!("{path}: {e}"));
    taint().line_status(&syntax, line, None)
}

#[test]
fn a_line_whose_values_the_caller_chooses_is_told_from_one_a_source_reaches() {
    let py = "def to_python(self, value):\n    return Markup(value)\n";
    assert_eq!(
        status("t.py", py, 2),
        LineStatus::FromCaller(vec!["value".into()])
    );
    let php = "<?php\nclass P {\n  function run() {\n    $this->p = proc_open($this->command, static::SPEC, $this->pipes);\n  }\n}\n";
    assert_eq!(
        status("p.php", php, 4),
        LineStatus::FromCaller(vec!["the object's own state".into()])
    );
    let java = "class W {\n  void esc(Writer out, CharSequence input) throws IOException {\n    out.write(input.toString());\n  }\n}\n";
    assert_eq!(
        status("W.java", java, 3),
        LineStatus::FromCaller(vec!["input".into()])
    );
    // A bare name that is neither local nor a parameter is a field.
    let field = "class L {\n  void t(CharSequence input, Writer out) throws IOException {\n    final String result = map.get(input.toString());\n    out.write(result);\n  }\n}\n";
    assert_eq!(
        status("L.java", field, 4),
        LineStatus::FromCaller(vec!["input".into(), "the object's own state".into()])
    );
    // The request itself is no caller's choice.
    let servlet = "class S {\n  void doGet(HttpServletRequest r, HttpServletResponse w) throws IOException {\n    w.getWriter().print(r);\n  }\n}\n";
    assert!(matches!(
        status("S.java", servlet, 3),
        LineStatus::Traced(_)
    ));
    // An element of an Enumeration the request gave carries it.
    let headers = "class H {\n  void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {\n    String param = \"\";\n    java.util.Enumeration<String> headers = request.getHeaders(\"Referer\");\n    if (headers.hasMoreElements()) {\n      param = headers.nextElement();\n    }\n    response.getWriter().print(param);\n  }\n}\n";
    let LineStatus::Traced(steps) = status("H.java", headers, 8) else {
        panic!("not traced");
    };
    assert_eq!(steps.iter().map(|s| s.line).collect::<Vec<_>>(), [4, 4, 6]);
    // ... and of one the function made from literals, nothing.
    let fixed = "class H {\n  void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {\n    java.util.List<String> xs = new java.util.ArrayList<>();\n    xs.add(\"a\");\n    java.util.Iterator<String> it = xs.iterator();\n    response.getWriter().print(it.next());\n  }\n}\n";
    assert_eq!(status("H.java", fixed, 6), LineStatus::Constant);
    let traced = "<?php\n$id = $_GET['id'];\n$q = \"SELECT * FROM t WHERE id = '$id'\";\nmysqli_query($db, $q);\n";
    let LineStatus::Traced(steps) = status("q.php", traced, 4) else {
        panic!("not traced");
    };
    assert_eq!(steps.iter().map(|s| s.line).collect::<Vec<_>>(), [2, 2, 3]);
}

#[test]
fn a_line_of_literals_is_constant_and_a_call_elsewhere_is_unknown() {
    let lit =
        "<?php\nfunction v() {\n  $r = explode(' ', trim((string) shell_exec('hg id -nb')));\n}\n";
    assert_eq!(status("h.php", lit, 3), LineStatus::Constant);
    let other = "def f():\n    cmd = build()\n    os.system(cmd)\n";
    assert_eq!(status("o.py", other, 3), LineStatus::Unknown);
    let pure = "def f(name):\n    cmd = 'ls ' + str(name)\n    os.system(cmd)\n";
    // Built here with literal text: not the caller's value passed on.
    assert_eq!(
        status("o.py", pure, 3),
        LineStatus::Built(vec!["name".into()])
    );
    let member = "class F {\n  void w() throws IOException {\n    java.io.File target = new java.io.File(new java.io.File(org.example.Utils.FILES_DIR), \"out.txt\");\n    new java.io.FileWriter(target, true);\n  }\n}\n";
    assert_eq!(status("F.java", member, 4), LineStatus::Constant);
    let none = "x = 1\n\ny = 2\n";
    assert_eq!(status("n.py", none, 2), LineStatus::Unknown);
}

#[test]
fn a_value_built_here_or_a_statement_over_lines_is_never_constant_nor_the_callers() {
    // Spliced into a shell command with literal text: the function builds it.
    let built = "class T {\n  int pack(String archive) throws Exception {\n    return new ProcessBuilder(\"sh\", \"-c\", \"tar czf \" + archive).start().waitFor();\n  }\n}\n";
    assert_eq!(
        status("T.java", built, 3),
        LineStatus::Built(vec!["archive".into()])
    );
    // A statement over two lines is read whole: the request value spliced
    // into the call that starts on the line above reaches the line.
    let go = "package d\nfunc (s *S) By(w http.ResponseWriter, r *http.Request) {\n\treq := ldap.NewSearchRequest(\"ou=people\", 0,\n\t\t\"(mail=\"+r.URL.Query().Get(\"mail\")+\")\", nil)\n\t_ = req\n}\n";
    assert!(matches!(status("a.go", go, 4), LineStatus::Traced(_)));
    assert!(matches!(status("a.go", go, 3), LineStatus::Traced(_)));
    // ... and a literal over two lines is constant; a caller's value on
    // the other line is the caller's.
    let lit = "class F {\n  void w(String name) throws IOException {\n    java.io.FileWriter fw =\n        new java.io.FileWriter(new java.io.File(org.example.Utils.DIR), true);\n    java.io.FileWriter gw =\n        new java.io.FileWriter(name, true);\n  }\n}\n";
    assert_eq!(status("F.java", lit, 4), LineStatus::Constant);
    assert_eq!(status("F.java", lit, 3), LineStatus::Constant);
    assert_eq!(
        status("F.java", lit, 6),
        LineStatus::FromCaller(vec!["name".into()])
    );
    // A statement that holds a block (a lambda's body) is not read whole.
    let lambda = "class G {\n  void g(java.util.List<String> xs, String p) {\n    xs.forEach(x -> {\n      System.out.println(p);\n    });\n  }\n}\n";
    assert_eq!(status("G.java", lambda, 3), LineStatus::Unknown);
    // C writes through pointers: not followed.
    let c = "void f(const char *line) {\n  char buf[64];\n  strncpy(buf, line, 63);\n  buf[63] = 0;\n  syslog(LOG_WARNING, buf);\n}\n";
    assert_eq!(status("a.c", c, 5), LineStatus::Unknown);
    // A container's element set does not replace the container.
    let part = "def f(line):\n    buf = line\n    buf[0] = 0\n    os.system(buf)\n";
    assert_eq!(
        status("a.py", part, 4),
        LineStatus::FromCaller(vec!["line".into()])
    );
}

#[test]
fn a_parameter_is_followed_to_the_arguments_of_the_files_own_calls() {
    // Python, by position and by keyword, on `self`.
    let py = "class V:\n    def page(self):\n        return self.show(request.args['n'])\n    def show(self, text):\n        return HttpResponse('<p>' + text + '</p>')\n";
    let found = flows("v.py", py);
    assert_eq!(found.len(), 1, "{found:?}");
    let (sink, line, trace) = &found[0];
    assert_eq!((sink.as_str(), *line), ("xss/python-response", 5));
    assert!(trace.starts_with("line 3: an HTTP request"), "{trace}");
    assert!(
        trace.contains("line 3: is passed as `text` to `self.show`"),
        "{trace}"
    );
    let keyword = "def page():\n    return show(size=3, text=request.args['n'])\ndef show(size, text):\n    return HttpResponse('<p>' + text + '</p>')\n";
    assert_eq!(
        sinks("v.py", keyword),
        [("xss/python-response".to_string(), 4)]
    );
    // Java, two calls up.
    let java = "class A {\n  void go(HttpServletRequest q, HttpServletResponse r) throws Exception {\n    first(r, q.getParameter(\"to\"));\n  }\n  void first(HttpServletResponse r, String to) throws Exception {\n    second(r, to);\n  }\n  void second(HttpServletResponse r, String where) throws Exception {\n    r.sendRedirect(where);\n  }\n}\n";
    assert_eq!(sinks("A.java", java), [("redirect/java".to_string(), 9)]);
    // Go declares two parameters at once.
    let go = "package p\nfunc h(w http.ResponseWriter, r *http.Request) {\n\tfetch(\"x\", r.URL.Query().Get(\"u\"))\n}\nfunc fetch(a, u string) {\n\thttp.Get(u)\n}\n";
    assert_eq!(sinks("p.go", go), [("ssrf/go".to_string(), 6)]);
}

#[test]
fn a_caller_that_cleans_or_passes_a_constant_or_another_argument_is_no_flow() {
    // The caller escapes the value.
    let php =
        "<?php\nfunction show($t) { echo \"<p>$t</p>\"; }\nshow(htmlspecialchars($_GET['t']));\n";
    assert!(sinks("a.php", php).is_empty());
    // The request value goes to another parameter than the one the sink takes.
    let other = "<?php\nfunction show($t, $n) { echo \"<p>$t</p>\" . strlen($n); }\nshow('fixed', $_GET['t']);\n";
    assert!(sinks("a.php", other).is_empty());
    // Two functions of the name: which one is called is not known.
    let two = "class A {\n  void go(HttpServletRequest q, HttpServletResponse r) throws Exception {\n    send(r, q.getParameter(\"to\"));\n  }\n  void send(HttpServletResponse r, String to) throws Exception {\n    r.sendRedirect(to);\n  }\n  void send(HttpServletResponse r, int code) throws Exception {\n    r.sendError(code);\n  }\n}\n";
    assert!(sinks("A.java", two).is_empty());
    // Three calls up is beyond the bound.
    let deep = "def a():\n    b(request.args['n'])\ndef b(x):\n    c(x)\ndef c(y):\n    d(y)\ndef d(z):\n    return HttpResponse('<p>' + z + '</p>')\n";
    assert!(sinks("v.py", deep).is_empty());
    let near = "def b():\n    c(request.args['n'])\ndef c(y):\n    d(y)\ndef d(z):\n    return HttpResponse('<p>' + z + '</p>')\n";
    assert_eq!(
        sinks("v.py", near),
        [("xss/python-response".to_string(), 6)]
    );
}

#[test]
fn a_value_followed_to_the_callers_does_not_change_what_the_line_is_told() {
    // The line's values come from the caller: the caller's own walk (a
    // call it cannot follow) does not make the line unknown.
    let code = "def a():\n    b(helper())\ndef b(x):\n    os.system(x)\n";
    let syntax = parse("v.py", code, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        taint().line_status(&syntax, 4, Some(78)),
        LineStatus::FromCaller(vec!["x".to_string()])
    );
}

#[test]
fn an_assignment_to_a_member_that_renders_markup_is_a_sink() {
    let js = "const q = new URLSearchParams(location.search);\nconst n = q.get('n');\nel.innerHTML = '<b>' + n + '</b>';\nel.textContent = n;\n";
    let found = flows("a.js", js);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].0.as_str(), found[0].1), ("xss/js-dom", 3));
    assert!(
        found[0].2.ends_with(
            "line 3: is assigned to `el.innerHTML` (request value written into an html response)"
        ),
        "{}",
        found[0].2
    );
    let cs = "class A : Page {\n  void Page_Load() {\n    lit.Text = Request.QueryString[\"m\"];\n    box.Enabled = Request.QueryString[\"m\"] != null;\n  }\n}\n";
    assert_eq!(sinks("A.cs", cs), [("xss/csharp-control".to_string(), 3)]);
}

/// The skeptic's check, on the syntax tree, of the line of `text` that
/// holds `SINK`.
fn skeptic(path: &str, text: &str, rule: &str) -> Judged {
    skeptic_with(path, text, &[], rule)
}

/// `refuted` is refuted and `confirmed` confirmed by the skeptic's check.
fn twins(path: &str, rule: &str, refuted: &str, confirmed: &str) {
    let j = skeptic(path, refuted, rule);
    assert_eq!(j.verdict, "refuted", "{refuted}\n{j:?}");
    let j = skeptic(path, confirmed, rule);
    assert_eq!(j.verdict, "confirmed", "{confirmed}\n{j:?}");
}

#[test]
fn a_constant_condition_rules_out_an_arm_on_the_tree() {
    let servlet = |body: &str| {
        format!(
            "class A {{\n  void doPost(HttpServletRequest request) throws Exception {{\n    String param = request.getParameter(\"v\");\n    String bar;\n{body}\n    String sql = \"SELECT * FROM t WHERE n = '\" + bar + \"'\"; // SINK\n  }}\n}}\n"
        )
    };
    let body =
        "    int limit = 4;\n    if ((3 * 5) - limit > 10) bar = \"fixed\";\n    else bar = param;";
    twins(
        "A.java",
        "sql/concat",
        &servlet(body),
        &servlet(&body.replace("3 * 5", "3 * 2")),
    );
    let body = "    int limit = 4;\n    bar = (3 * 5) - limit > 10 ? \"fixed\" : param;";
    twins(
        "A.java",
        "sql/concat",
        &servlet(body),
        &servlet(&body.replace("3 * 5", "3 * 2")),
    );
    let py = "def f():\n    param = request.args['v']\n    limit = 4\n    if (3 * 5) - limit > 10:\n        bar = 'fixed'\n    else:\n        bar = param\n    os.system('ping ' + bar)  # SINK\n";
    twins(
        "a.py",
        "exec/python-os-system",
        py,
        &py.replace("3 * 5", "3 * 2"),
    );
    // A sink in an arm that never runs.
    let never = "function f(req) {\n  const limit = 4;\n  if ((3 * 2) - limit > 10) {\n    db.query('SELECT * FROM t WHERE n = ' + req.query.v); // SINK\n  }\n}\n";
    let j = skeptic("a.js", never, "sql/concat");
    assert_eq!(j.verdict, "refuted", "{j:?}");
    assert!(j.why.contains("never runs"), "{j:?}");
}

#[test]
fn what_is_not_a_constant_leaves_both_arms() {
    // A parameter, a local set twice, one set in a branch, a call, a field:
    // none is a constant, and the request value may reach the sink.
    for condition in [
        "limit > 10",
        "count > 10",
        "late > 10",
        "Integer.parseInt(\"15\") > 10",
        "this.size > 10",
        "\"abc\".length() > 2",
    ] {
        let code = format!(
            "class A {{\n  void doPost(HttpServletRequest request, int limit) throws Exception {{\n    String param = request.getParameter(\"v\");\n    int count = 4;\n    count = 40;\n    int late;\n    if (param.isEmpty()) late = 50;\n    String bar = \"fixed\";\n    if ({condition}) bar = param;\n    String sql = \"SELECT * FROM t WHERE n = '\" + bar + \"'\"; // SINK\n  }}\n}}\n"
        );
        let j = skeptic("A.java", &code, "sql/concat");
        assert_ne!(j.verdict, "refuted", "{condition}: {j:?}");
    }
}

#[test]
fn a_taint_rule_does_not_report_a_sink_that_never_runs_nor_a_value_it_rules_out() {
    let dead_sink = "<?php\n$debug = 0;\nif ($debug == 1) {\n  include($_GET['page']);\n}\n";
    assert!(sinks("a.php", dead_sink).is_empty());
    assert_eq!(
        sinks("a.php", &dead_sink.replace("$debug = 0", "$debug = 1")),
        [("include/php".to_string(), 4)]
    );
    let dead_value =
        "def f():\n    page = 'home' if 2 > 1 else request.args['p']\n    return send_file(page)\n";
    assert!(sinks("a.py", dead_value).is_empty());
    assert_eq!(
        sinks("a.py", &dead_value.replace("2 > 1", "2 < 1")),
        [("path/python-open".to_string(), 3)]
    );
}

#[test]
fn a_call_of_a_function_of_the_file_is_followed_into_what_it_returns() {
    // What the helper returns comes from its parameter: the call's
    // argument, a request value.
    let java = "class A {\n  void doPost(HttpServletRequest request, HttpServletResponse r) throws Exception {\n    String to = new Helper().pick(\"x\", request.getParameter(\"to\"));\n    r.sendRedirect(to);\n  }\n  class Helper {\n    String pick(String a, String b) {\n      String out = b.trim();\n      return out;\n    }\n  }\n}\n";
    let found = flows("A.java", java);
    assert_eq!(found.len(), 1, "{found:?}");
    let trace = &found[0].2;
    assert!(
        trace.contains("is passed as `b` to `newHelper().pick`"),
        "{trace}"
    );
    assert!(
        trace.contains("is returned by `newHelper().pick`"),
        "{trace}"
    );
    // It returns the other argument, or a constant: no flow, and the line
    // is constant for the skeptic.
    let other = java.replace("String out = b.trim();", "String out = a.trim();");
    assert!(sinks("A.java", &other).is_empty());
    let fixed = java.replace("String out = b.trim();", "String out = \"/home\";");
    assert!(sinks("A.java", &fixed).is_empty());
    let syntax = parse("A.java", &fixed, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        taint().line_status(&syntax, 4, Some(601)),
        LineStatus::Constant
    );
    // A helper whose constant condition rules out the request value.
    let py = "def pick(v):\n    limit = 3\n    if limit > 5:\n        return v\n    return 'home'\ndef view():\n    page = pick(request.args['p'])\n    return send_file(page)\n";
    assert!(sinks("a.py", py).is_empty());
    assert_eq!(
        sinks("a.py", &py.replace("limit = 3", "limit = 9")),
        [("path/python-open".to_string(), 8)]
    );
}

#[test]
fn a_call_of_another_files_class_or_of_an_overloaded_name_is_not_followed() {
    let syntax =
        |code: &str| parse("A.java", code, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
    // `Other` is not declared here: its `pick` may be anything.
    let code = "class A {\n  void go(HttpServletResponse r) throws Exception {\n    String to = new Other().pick(\"/home\");\n    r.sendRedirect(to); // SINK\n  }\n  String pick(String a) {\n    return a;\n  }\n}\n";
    assert_eq!(
        taint().line_status(&syntax(code), 4, Some(601)),
        LineStatus::Unknown
    );
    // Two functions of the name.
    let two = "class A {\n  void go(HttpServletResponse r) throws Exception {\n    String to = pick(\"/home\");\n    r.sendRedirect(to);\n  }\n  String pick(String a) {\n    return a;\n  }\n  String pick(int a) {\n    return System.getenv(\"HOME\");\n  }\n}\n";
    assert_eq!(
        taint().line_status(&syntax(two), 4, Some(601)),
        LineStatus::Unknown
    );
    let one = two.replace(
        "String pick(int a) {\n    return System.getenv(\"HOME\");\n  }\n",
        "",
    );
    assert_eq!(
        taint().line_status(&syntax(&one), 4, Some(601)),
        LineStatus::Constant
    );
}

#[test]
fn a_php_variable_in_capitals_is_no_constant() {
    // `$_SESSION` holds what an earlier request put there.
    let code = "<?php\n$id = $_SESSION['id'];\n$query = \"SELECT * FROM users WHERE user_id = '$id'\";\n$r = mysqli_query($db, $query); // SINK\n";
    let j = skeptic("a.php", code, "sql/interpolation");
    assert_ne!(j.verdict, "refuted", "{j:?}");
    let fixed = code.replace("$_SESSION['id']", "'42'");
    let syntax = parse("a.php", &fixed, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        taint().line_status(&syntax, 3, Some(89)),
        LineStatus::Constant
    );
}

#[test]
fn a_line_of_a_call_written_over_several_is_not_refuted_on_its_own() {
    let code = "def lab(request):\n    domain = request.POST.get('domain')\n    command = 'dig {}'.format(domain)\n    process = subprocess.Popen(\n        command,\n        shell=True,  # SINK\n    )\n";
    let j = skeptic("a.py", code, "exec/python-shell-true");
    assert_ne!(j.verdict, "refuted", "{j:?}");
    // A handler passed to a call is a body of its own: its lines are
    // judged as they are.
    let js = "app.get('/x', (req, res) => {\n  const n = 'fixed';\n  db.query('SELECT * FROM t WHERE n = ' + n); // SINK\n});\n";
    assert_eq!(skeptic("a.js", js, "sql/concat").verdict, "refuted");
}

#[test]
fn a_read_under_a_literal_key_sees_only_what_was_put_under_it() {
    // Each pair: the same code reading the key the request value was put
    // under (a flow), and another key (none).
    let php = "<?php\n$a = [];\n$a['f'] = $_GET['f'];\n$a['g'] = 'fixed';\nreadfile($a['KEY']);\n";
    let py = "def v():\n    d = {}\n    d['f'] = request.args['f']\n    d['g'] = 'fixed'\n    return send_file(d['KEY'])\n";
    let py_literal = "def v():\n    d = {'f': request.args['f'], \"g\": 'fixed'}\n    return send_file(d.get('KEY'))\n";
    let js = "app.get('/', (req, res) => {\n  const o = {f: req.query.f, g: 'fixed'};\n  res.redirect(o['KEY']);\n});\n";
    let rb =
        "def show\n  h = {}\n  h[:f] = params[:f]\n  h[:g] = 'fixed'\n  redirect_to h[:KEY]\nend\n";
    for (path, code, sink, line) in [
        ("a.php", php, "path/php-file", 5),
        ("a.py", py, "path/python-open", 5),
        ("b.py", py_literal, "path/python-open", 3),
        ("a.js", js, "redirect/js", 3),
        ("a.rb", rb, "redirect/ruby", 5),
    ] {
        assert_eq!(
            sinks(path, &code.replace("KEY", "f")),
            [(sink.to_string(), line)],
            "{code}"
        );
        assert!(sinks(path, &code.replace("KEY", "g")).is_empty(), "{code}");
    }
    // Java: a search filter's fields. The skeptic refutes the read of the
    // fixed field, and confirms the read of the customer's.
    let servlet = |key: &str| {
        format!(
            "class Orders {{\n  void doGet(HttpServletRequest request) throws Exception {{\n    Map<String, String> filter = new HashMap<>();\n    filter.put(\"status\", \"open\");\n    filter.put(\"customer\", request.getParameter(\"customer\"));\n    String value = filter.get(\"{key}\");\n    String sql = \"SELECT * FROM orders WHERE f = '\" + value + \"'\"; // SINK\n  }}\n}}\n"
        )
    };
    twins(
        "A.java",
        "sql/concat",
        &servlet("status"),
        &servlet("customer"),
    );
}

#[test]
fn a_key_that_is_not_a_literal_may_be_any_key() {
    // Written or read under a computed key, or the whole container read:
    // the request value may be there.
    let written =
        "def v(k):\n    d = {}\n    d[k] = request.args['f']\n    return send_file(d['g'])\n";
    assert_eq!(
        sinks("a.py", written),
        [("path/python-open".to_string(), 4)]
    );
    let read =
        "def v(k):\n    d = {}\n    d['f'] = request.args['f']\n    return send_file(d[k])\n";
    assert_eq!(sinks("a.py", read), [("path/python-open".to_string(), 4)]);
    let whole =
        "def v():\n    d = {}\n    d['f'] = request.args['f']\n    return send_file(str(d))\n";
    assert_eq!(sinks("a.py", whole), [("path/python-open".to_string(), 4)]);
    let interpolated = "<?php\n$a = [];\n$a[\"f$x\"] = $_GET['f'];\nreadfile($a['g']);\n";
    assert_eq!(
        sinks("a.php", interpolated),
        [("path/php-file".to_string(), 4)]
    );
    // A literal with a spread in it holds whatever the spread does.
    let spread = "app.get('/', (req, res) => {\n  const o = {...req.query, g: 'fixed'};\n  res.redirect(o['f']);\n});\n";
    assert_eq!(sinks("a.js", spread), [("redirect/js".to_string(), 3)]);
}

#[test]
fn a_literal_key_is_read_without_its_quotes() {
    let key = |path: &str, code: &str| {
        let syntax = parse(path, code, &Limits::default()).unwrap_or_else(|e| panic!("{e}"));
        let mut found = Vec::new();
        walk(syntax.root(), |n, _| {
            if matches!(n.kind(), "identifier" | "variable_name")
                && let Some(k) = keys::read_key(&syntax, n)
            {
                found.push((syntax.text_of(n).to_string(), k));
            }
            Visit::Enter
        });
        found
    };
    let pair = |a: &str, b: &str| vec![(a.to_string(), b.to_string())];
    assert_eq!(key("a.py", "x = d['k']\n"), pair("d", "k"));
    assert_eq!(key("a.py", "x = d.get(\"k\")\n"), pair("d", "k"));
    assert_eq!(key("a.php", "<?php\n$x = $a[0];\n"), pair("$a", "0"));
    assert_eq!(key("a.rb", "x = h[:k]\n"), pair("h", "k"));
    assert_eq!(key("a.go", "package a\nvar x = m[\"k\"]\n"), pair("m", "k"));
    // No literal: an f-string, a name, a slice.
    assert!(key("a.py", "x = d[f'{k}']\ny = d[k]\nz = d[1:2]\n").is_empty());
    // A getter on something else's result is not this name's part.
    assert!(key("a.py", "x = d.items().get('k')\n").is_empty());
}

#[test]
fn a_predictable_random_value_kept_as_a_secret_is_its_own_source() {
    let servlet = |value: &str| {
        format!(
            "class A {{\n  void go(HttpServletRequest request, HttpServletResponse response) throws Exception {{\n    String v = {value};\n    response.addCookie(new Cookie(\"remember\", v));\n  }}\n}}\n"
        )
    };
    // A number or a hash of it is as predictable.
    let random = servlet("Integer.toString((int) (new java.util.Random().nextDouble() * 1000))");
    assert_eq!(
        sinks("A.java", &random),
        [("random/java-cookie".to_string(), 4)]
    );
    // A request value in a cookie is no predictable secret, and a
    // framework's request parameter is a source of request values only.
    let request = servlet("request.getParameter(\"v\")");
    assert!(sinks("A.java", &request).is_empty());
    let secure = servlet("Long.toString(new java.security.SecureRandom().nextLong())");
    assert!(sinks("A.java", &secure).is_empty());
}

#[test]
fn a_value_the_condition_around_it_checks_to_be_a_number_is_safe_there() {
    // Each octet checked, the address put back together from them.
    let php = "<?php\n$target = $_REQUEST['ip'];\n$octet = explode('.', $target);\nif (is_numeric($octet[0]) && is_numeric($octet[1]) && sizeof($octet) == 2) {\n  $target = $octet[0] . '.' . $octet[1];\n  $cmd = shell_exec('ping ' . $target); // SINK\n}\n";
    let j = skeptic("a.php", php, "exec/php-shell");
    assert_eq!(j.verdict, "refuted", "{j:?}");
    assert!(j.why.contains("checked"), "{j:?}");
    // One part unchecked, the check on another value, the sink outside
    // the arm, or the name set again in the arm: not safe.
    for unsafe_ in [
        php.replace("is_numeric($octet[1])", "strlen($octet[1])"),
        php.replace("is_numeric($octet[1])", "is_numeric($octet[2])"),
        php.replace(
            "  $cmd = shell_exec('ping ' . $target); // SINK\n}\n",
            "}\n$cmd = shell_exec('ping ' . $target); // SINK\n",
        ),
        php.replace(
            "  $target = $octet[0]",
            "  $octet = explode('.', $_GET['ip']);\n  $target = $octet[0]",
        ),
    ] {
        let j = skeptic("a.php", &unsafe_, "exec/php-shell");
        assert_ne!(j.verdict, "refuted", "{unsafe_}\n{j:?}");
    }
    // Python's method checks, and the `else` of a failed check.
    let py = "def f():\n    n = request.args['n']\n    if n.isdigit():\n        os.system('kill ' + n)  # SINK\n";
    twins(
        "a.py",
        "exec/python-os-system",
        py,
        &py.replace("n.isdigit()", "n"),
    );
    let negated = "def f():\n    n = request.args['n']\n    if not n.isdigit():\n        return\n    else:\n        os.system('kill ' + n)  # SINK\n";
    let j = skeptic("a.py", negated, "exec/python-os-system");
    assert_eq!(j.verdict, "refuted", "{j:?}");
    // A taint rule's flow is cut by the check as well.
    let include = "<?php\n$p = $_GET['p'];\nif (ctype_digit($p)) {\n  include('page' . $p . '.php');\n}\ninclude($p);\n";
    assert_eq!(sinks("i.php", include), [("include/php".to_string(), 6)]);
}

#[test]
fn a_check_that_leaves_when_it_fails_guards_the_rest_of_its_block() {
    // Python: an early return on a failed check, a list of literals.
    let py = "@app.route('/a')\ndef a():\n    n = request.args['n']\n    if not n.isalnum():\n        return 'bad', 400\n    os.system('kill ' + n)\n";
    assert!(sinks("a.py", py).is_empty(), "{:?}", flows("a.py", py));
    let listed = "@app.route('/a')\ndef a():\n    n = request.args['n']\n    if n not in ('TERM', 'HUP'):\n        return 'bad', 400\n    os.system('kill -' + n)\n";
    assert!(
        sinks("b.py", listed).is_empty(),
        "{:?}",
        flows("b.py", listed)
    );
    // The check does not leave, the sink is before it, or the value is
    // set again after it: not safe.
    for unsafe_ in [
        py.replace("        return 'bad', 400\n", "        log('bad')\n"),
        py.replace(
            "    os.system('kill ' + n)\n",
            "    n = request.args['m']\n    os.system('kill ' + n)\n",
        ),
        "@app.route('/a')\ndef a():\n    n = request.args['n']\n    os.system('kill ' + n)\n    if not n.isalnum():\n        return 'bad', 400\n".to_string(),
        listed.replace("not in", "in"),
    ] {
        assert_eq!(sinks("c.py", &unsafe_).len(), 1, "{unsafe_}");
    }
    // Java: a null test or a failed whole match, then a return.
    let java = "class A extends HttpServlet {\n  void doGet(HttpServletRequest req, HttpServletResponse resp) throws Exception {\n    String h = req.getParameter(\"h\");\n    if (h == null || !h.matches(\"[a-z0-9-]{1,63}\")) {\n      resp.sendError(400);\n      return;\n    }\n    Runtime.getRuntime().exec(new String[] {\"sh\", \"-c\", \"ping \" + h});\n  }\n}\n";
    assert!(
        sinks("A.java", java).is_empty(),
        "{:?}",
        flows("A.java", java)
    );
    // A dot or a slash let through: still a path.
    let path = java.replace("[a-z0-9-]{1,63}", "[a-z0-9./]+").replace(
        "Runtime.getRuntime().exec(new String[] {\"sh\", \"-c\", \"ping \" + h});",
        "new java.io.FileInputStream(\"/srv/\" + h);",
    );
    assert_eq!(sinks("B.java", &path).len(), 1, "{path}");
    // A pattern that lets a quote or anything through cleans nothing.
    for pattern in ["[^;]+", ".*", "[a-z']+"] {
        let open = java.replace("[a-z0-9-]{1,63}", pattern);
        assert_eq!(sinks("C.java", &open).len(), 1, "{open}");
    }
}

#[test]
fn patterns_compiled_once_and_literal_lists_are_read_where_they_are_set() {
    // Go: a package-level pattern, and a number parsed with its error.
    let go = "package d\n\nvar refPattern = regexp.MustCompile(`^[0-9a-f]{7,40}$`)\n\nfunc Hook(w http.ResponseWriter, r *http.Request) {\n\tref := r.FormValue(\"ref\")\n\tif !refPattern.MatchString(ref) {\n\t\thttp.Error(w, \"bad\", 400)\n\t\treturn\n\t}\n\texec.Command(\"sh\", \"-c\", \"git checkout \"+ref).Run()\n}\n";
    assert!(sinks("h.go", go).is_empty(), "{:?}", flows("h.go", go));
    let loose = go.replace("^[0-9a-f]{7,40}$", "[0-9a-f]{7,40}");
    assert_eq!(sinks("h.go", &loose).len(), 1, "{loose}");
    let number = "package d\n\nfunc Hook(w http.ResponseWriter, r *http.Request) {\n\tid := r.FormValue(\"id\")\n\tif _, err := strconv.Atoi(id); err != nil {\n\t\treturn\n\t}\n\texec.Command(\"sh\", \"-c\", \"kill \"+id).Run()\n}\n";
    assert!(
        sinks("n.go", number).is_empty(),
        "{:?}",
        flows("n.go", number)
    );
    // JavaScript: a regex literal's test, a list's includes.
    let js = "app.get('/c', (req, res) => {\n  const f = String(req.query.f);\n  if (!/^[\\w-]+$/.test(f)) {\n    return res.status(400).end();\n  }\n  exec('convert ' + f);\n});\n";
    assert!(sinks("c.js", js).is_empty(), "{:?}", flows("c.js", js));
    let multiline = js.replace("/^[\\w-]+$/", "/^[\\w-]+$/m");
    assert_eq!(sinks("c.js", &multiline).len(), 1, "{multiline}");
    let includes = "app.get('/c', (req, res) => {\n  const f = String(req.query.f);\n  if (!['png', 'jpg'].includes(f)) {\n    return res.status(400).end();\n  }\n  exec('convert a.' + f);\n});\n";
    assert!(
        sinks("d.js", includes).is_empty(),
        "{:?}",
        flows("d.js", includes)
    );
    // Python: a compiled pattern's fullmatch; `$` in a search lets a
    // final newline through, which still splits a shell's commands.
    let py = "SAFE = re.compile(r'[A-Za-z0-9_.-]+')\n\n@app.route('/a')\ndef a():\n    n = request.args['n']\n    if not SAFE.fullmatch(n):\n        abort(400)\n        return\n    os.system('gzip ' + n)\n";
    assert!(sinks("e.py", py).is_empty(), "{:?}", flows("e.py", py));
    let dollar = py
        .replace("r'[A-Za-z0-9_.-]+'", "r'^[A-Za-z0-9_.-]+$'")
        .replace("SAFE.fullmatch", "SAFE.match");
    assert_eq!(sinks("f.py", &dollar).len(), 1, "{dollar}");
    // Set twice: not known.
    let twice = py.replace("\n\n@app", "\nSAFE = re.compile(r'.*')\n\n@app");
    assert_eq!(sinks("g.py", &twice).len(), 1, "{twice}");
}

/// The skeptic's check of the line of `text` (in `path`) that holds
/// `SINK`, with `others` read too.
fn skeptic_with(path: &str, text: &str, others: &[(&str, &str)], rule: &str) -> Judged {
    let table = SourceTable::bundled().unwrap_or_else(|e| panic!("{e}"));
    let (mut files, line) = sources::marked(path, text);
    for (p, t) in others {
        files.insert((*p).to_string(), crate::util::numbered(t));
    }
    judge(
        table,
        &Trees::default(),
        None,
        path,
        &files,
        line,
        Some(rule),
    )
}

#[test]
fn a_call_into_another_files_class_is_followed_on_its_tree() {
    let servlet = |value: &str| {
        format!(
            "class A {{\n  void doPost(HttpServletRequest request) throws Exception {{\n    String param = request.getParameter(\"v\");\n    Shape shape = Shapes.make();\n    String bar = {value};\n    String sql = \"SELECT * FROM t WHERE n = '\" + bar + \"'\";\n    db.createStatement().execute(sql); // SINK\n  }}\n}}\n"
        )
    };
    let shape = "interface Shape {\n  String name(String given);\n}\n";
    let square = "class Square implements Shape {\n  @Override\n  public String name(String given) {\n    String r = given;\n    return r;\n  }\n}\n";
    let fixed = "class Fixed {\n  static String label(String ignored) {\n    return \"square\";\n  }\n  String own(String x) {\n    return this.prefix + x;\n  }\n}\n";
    let read = [
        ("Shape.java", shape),
        ("Square.java", square),
        ("Fixed.java", fixed),
    ];
    let judged = |value: &str, others: &[(&str, &str)]| {
        skeptic_with("A.java", &servlet(value), others, "sql/concat")
    };
    // What the implementer returns is what it was given: a literal.
    let j = judged("shape.name(\"circle\")", &read);
    assert_eq!(j.verdict, "refuted", "{j:?}");
    assert!(j.why.starts_with("on the syntax tree"), "{j:?}");
    assert!(j.why.contains("calls followed into Square.java"), "{j:?}");
    // ... or the request's value, which it passes on.
    let j = judged("shape.name(param)", &read);
    assert_eq!(j.verdict, "confirmed", "{j:?}");
    // A static method that returns a literal, whatever it is given; a new
    // object's method that also reads the object's state is not followed.
    let j = judged("Fixed.label(param)", &read);
    assert_eq!(j.verdict, "refuted", "{j:?}");
    assert!(j.why.contains("calls followed into Fixed.java"), "{j:?}");
    let j = judged("new Fixed().own(\"x\")", &read);
    assert!(!j.why.starts_with("on the syntax tree"), "{j:?}");
    // A class no file read declares is wanted, never taken for a constant.
    let j = judged("shape.name(\"circle\")", &[]);
    assert_ne!(j.verdict, "refuted", "{j:?}");
    assert!(j.wants.contains("Shape"), "{j:?}");
    // The platform's classes are not looked for.
    let j = judged("String.valueOf(param)", &read);
    assert!(!j.wants.contains("String"), "{j:?}");
}

#[test]
fn the_object_a_sink_is_called_on_and_a_class_named_with_its_package_are_no_values() {
    let code = "class A {\n  void go(Connection connection, String base, String end) throws Exception {\n    String sql = \"SELECT 1\";\n    java.nio.file.Path p = java.nio.file.Paths.get(\"/tmp/x\");\n    ResultSet rs = connection.createStatement().executeQuery(sql);\n    String q = base.concat(end);\n    ResultSet all = connection.createStatement().executeQuery();\n  }\n}\n";
    assert_eq!(status("A.java", code, 4), LineStatus::Constant);
    assert_eq!(status("A.java", code, 5), LineStatus::Constant);
    // A string built on its object passes the object on.
    assert_eq!(
        status("A.java", code, 6),
        LineStatus::FromCaller(vec!["base".to_string(), "end".to_string()])
    );
    // A call given nothing keeps its object: there is no other value.
    assert_eq!(
        status("A.java", code, 7),
        LineStatus::FromCaller(vec!["connection".to_string()])
    );
}

#[test]
fn what_another_files_class_returns_outside_java_and_csharp_is_never_refuted() {
    let cases = [
        (
            "app.py",
            "sql/concat",
            "def find(cursor):\n    name = Helpers.lookup('id')\n    cursor.execute(\"SELECT * FROM t WHERE n = '\" + name + \"'\")  # SINK\n",
        ),
        (
            "app.php",
            "sql/php-query-concat",
            "<?php\nfunction show($conn) {\n    $id = Input::get('id');\n    $query = \"SELECT * FROM users WHERE id = \" . $id; // SINK\n}\n",
        ),
        (
            "app.php",
            "sql/php-query-concat",
            "<?php\nclass C {\n  function show($conn) {\n    $id = $this->input->get('id');\n    $query = \"SELECT * FROM users WHERE id = \" . $id; // SINK\n  }\n}\n",
        ),
        (
            "a.js",
            "exec/node-child-process",
            "function run() {\n  const cmd = Config.command('ls');\n  exec(cmd); // SINK\n}\n",
        ),
        (
            "a.rb",
            "exec/ruby-system",
            "def run\n  cmd = Settings.get('cmd')\n  system(cmd) # SINK\nend\n",
        ),
    ];
    for (path, rule, text) in cases {
        let j = skeptic(path, text, rule);
        assert_ne!(j.verdict, "refuted", "{text}\n{j:?}");
    }
}

#[test]
fn bound_parameters_and_a_writer_are_not_the_sinks_value() {
    // The query is a literal: what is bound beside it is no part of it.
    // A query built from the input is still its value.
    let py = "def f(cur):\n    bar = input()\n    cur.execute('SELECT * FROM t WHERE n = ?', (bar,))  # SINK\n";
    twins(
        "a.py",
        "sql/concat",
        py,
        &py.replace(
            "'SELECT * FROM t WHERE n = ?', (bar,)",
            "'SELECT * FROM t WHERE n = ' + bar",
        ),
    );
    let go = "package h\n\nfunc Find(db *sql.DB, r *http.Request) {\n\tdb.Query(\"SELECT * FROM t WHERE n = $1\", r.FormValue(\"n\")) // SINK\n}\n";
    let j = skeptic("a.go", go, "sql/concat");
    assert_eq!(j.verdict, "refuted", "{j:?}");
    // What a response writer is given is the value, not the writer.
    let w = "package h\n\nfunc Show(w http.ResponseWriter, r *http.Request) {\n\tfmt.Fprintf(w, \"<p>%s</p>\", \"fixed\") // SINK\n}\n";
    let j = skeptic("a.go", w, "xss/go-fprintf");
    assert_eq!(j.verdict, "refuted", "{j:?}");
}

#[test]
fn a_constant_the_file_declares_at_its_top_level_is_a_constant() {
    let go = "package store\n\nimport (\n\t\"database/sql\"\n\t\"fmt\"\n)\n\nconst tableName = \"accounts\"\n\nfunc NameOf(db *sql.DB, id int64) {\n\tq := fmt.Sprintf(\"SELECT name FROM %s WHERE id = $1\", tableName)\n\tdb.QueryRow(q, id) // SINK\n}\n";
    let j = skeptic("s.go", go, "sql/format-call");
    assert_eq!(j.verdict, "refuted", "{j:?}");
    // A variable of the package may be set anywhere.
    let var = go.replace("const tableName", "var tableName");
    assert_ne!(skeptic("s.go", &var, "sql/format-call").verdict, "refuted");
    let js = "const base = 'ls -l';\nfunction run() {\n  exec(base); // SINK\n}\n";
    assert_eq!(
        skeptic("a.js", js, "exec/node-child-process").verdict,
        "refuted"
    );
    let built = js.replace("'ls -l'", "process.argv[2]");
    assert_ne!(
        skeptic("a.js", &built, "exec/node-child-process").verdict,
        "refuted"
    );
}

#[test]
fn a_value_escaped_on_every_path_is_refuted_where_it_is_written_or_returned() {
    let go = "package h\n\nimport (\n\t\"fmt\"\n\t\"html\"\n\t\"net/http\"\n)\n\nfunc Show(w http.ResponseWriter, r *http.Request) {\n\tparam := r.FormValue(\"v\")\n\tbar := html.EscapeString(param)\n\tfmt.Fprintf(w, \"<p>%s</p>\", bar) // SINK\n}\n";
    let raw = go.replace("html.EscapeString(param)", "param");
    twins("a.go", "xss/go-response-html", go, &raw);
    let py = "def show():\n    param = request.form.get('v', '')\n    if len(param) > 3:\n        bar = html.escape(param)\n    else:\n        bar = markupsafe.escape(param)\n    return '<p>' + bar + '</p>'  # SINK\n";
    let one = py.replace("bar = markupsafe.escape(param)", "bar = param");
    twins("a.py", "xss/python-html-response", py, &one);
}

#[test]
fn a_line_that_only_continues_a_statement_is_read_with_it() {
    let code = "class F {\n  void w(String name) {\n    String sql =\n        \"SELECT * FROM t WHERE n = '\" + name + \"'\";\n    String fixed =\n        \"SELECT * FROM t WHERE n = 'a'\";\n  }\n}\n";
    assert_eq!(
        status("F.java", code, 4),
        LineStatus::Built(vec!["name".into()])
    );
    assert_eq!(status("F.java", code, 6), LineStatus::Constant);
}

/// Each of these lets untrusted input reach its sink in a way a first
/// version of the tree's check refuted (a review found them): never
/// refuted.
#[test]
fn what_a_review_found_refuted_is_never_refuted() {
    let never = |path: &str, text: &str, others: &[(&str, &str)], rule: &str| {
        let j = skeptic_with(path, text, others, rule);
        assert_ne!(j.verdict, "refuted", "{path}: {text}\n{j:?}");
    };
    // The run's own flow, through a call on the tainted value.
    let js = "function show() {\n  const msg = location.hash;\n  document.getElementById('out').innerHTML = msg.substr(1); // SINK\n}\n";
    never("a.js", js, &[], "xss/js-dom");
    never("a.js", js, &[], "web/inner-html");
    let slice = "function show() {\n  document.getElementById('out').innerHTML = location.hash.slice(1); // SINK\n}\n";
    never("a.js", slice, &[], "web/inner-html");
    let ret = "function f(req, res) {\n  const h = req.query.h;\n  return h.padStart(3, ' '); // SINK\n}\n";
    never("a.js", ret, &[], "xss/node-response-html");
    // A C# declaration, a Ruby command: no value the check reads.
    let cs = "class A {\n  void Page(HttpRequest request) {\n    string name = request.QueryString[\"name\"];\n    string sql = \"SELECT * FROM Users WHERE Name = '\" + name + \"'\"; // SINK\n  }\n}\n";
    never("A.cs", cs, &[], "sql/concat");
    let rb = "def run\n  `ls #{params[:d]}` # SINK\nend\n";
    never("a.rb", rb, &[], "exec/ruby-backtick");
    // A closure's own variable, named like a file constant or a package;
    // a constant object or list, changed elsewhere.
    let shadow = "const cmd = 'ls';\napp.get('/run', (req, res) => {\n  const cmd = req.query.cmd;\n  setTimeout(() => {\n    exec(cmd); // SINK\n  }, 10);\n});\n";
    never("a.js", shadow, &[], "exec/node-child-process");
    let object = "const opts = { cmd: 'ls' };\napp.use((req, res, next) => { opts.cmd = req.query.cmd; next(); });\nfunction run() {\n  exec(opts.cmd); // SINK\n}\n";
    never("a.js", object, &[], "exec/node-child-process");
    let go = "package h\n\nimport (\n\t\"net/http\"\n\t\"os\"\n\t\"path\"\n)\n\nfunc H(w http.ResponseWriter, r *http.Request) {\n\tpath := r.FormValue(\"p\")\n\tgo func() {\n\t\tos.Open(\"/srv/\" + path) // SINK\n\t}()\n}\n";
    never("h.go", go, &[], "path/go-file-from-input");
    // A query that is not the first argument.
    let php = "<?php\nfunction find() {\n    $id = $_GET['id'];\n    DB::query(Database::SELECT, 'SELECT * FROM users WHERE id = ' . $id)->execute(); // SINK\n}\n";
    never("a.php", php, &[], "sql/concat");
    let pgx = "package h\n\nimport (\n\t\"context\"\n\t\"net/http\"\n)\n\nfunc H(w http.ResponseWriter, r *http.Request) {\n\tid := r.FormValue(\"id\")\n\tpool.Exec(context.Background(), \"DELETE FROM t WHERE id = '\" + id + \"'\") // SINK\n}\n";
    never("h.go", pgx, &[], "sql/concat");
    // Calls into other files' classes.
    let servlet = |decl: &str, value: &str| {
        format!(
            "class A {{\n  void doPost(HttpServletRequest request) throws Exception {{\n    String param = request.getParameter(\"v\");\n    {decl}\n    String bar = {value};\n    String sql = \"SELECT * FROM t WHERE n = '\" + bar + \"'\";\n    db.createStatement().execute(sql); // SINK\n  }}\n}}\n"
        )
    };
    let cleaner =
        "class Cleaner {\n  public String clean(String s) {\n    return \"safe\";\n  }\n}\n";
    let read = [("Cleaner.java", cleaner)];
    let j = skeptic_with(
        "A.java",
        &servlet("Cleaner c = new Cleaner();", "c.clean(param)"),
        &read,
        "sql/concat",
    );
    assert_eq!(j.verdict, "refuted", "{j:?}");
    let anon = servlet(
        "Cleaner c = new Cleaner() { public String clean(String s) { return s; } };",
        "c.clean(param)",
    );
    never("A.java", &anon, &read, "sql/concat");
    let sub = format!(
        "{}class Evil extends Cleaner {{\n  public String clean(String s) {{\n    return s;\n  }}\n}}\n",
        servlet("Cleaner c = new Evil();", "c.clean(param)")
    );
    never("A.java", &sub, &read, "sql/concat");
    let mid = "class Mid extends Cleaner {\n}\n";
    let leaf =
        "class Leaf extends Mid {\n  public String clean(String s) {\n    return s;\n  }\n}\n";
    let deep = [
        ("Cleaner.java", cleaner),
        ("Mid.java", mid),
        ("Leaf.java", leaf),
    ];
    never(
        "A.java",
        &servlet("Cleaner c = new Leaf();", "c.clean(param)"),
        &deep,
        "sql/concat",
    );
    let danger = "class Danger {\n  public String clean(String s) {\n    return s;\n  }\n}\n";
    let two = [("Cleaner.java", cleaner), ("Danger.java", danger)];
    let each = "class A {\n  void other() {\n    Cleaner h = new Cleaner();\n  }\n  void doPost(HttpServletRequest request, java.util.List<Danger> hs) throws Exception {\n    for (Danger h : hs) {\n      String bar = h.clean(request.getParameter(\"v\"));\n      String sql = \"SELECT * FROM t WHERE n = '\" + bar + \"'\";\n      db.createStatement().execute(sql); // SINK\n    }\n  }\n}\n";
    never("A.java", each, &two, "sql/concat");
    let field = "class A {\n  private Danger h = new Danger();\n  void other() {\n    Cleaner h = new Cleaner();\n    h.clean(\"x\");\n  }\n  void doPost(HttpServletRequest request) throws Exception {\n    String bar = h.clean(request.getParameter(\"v\"));\n    String sql = \"SELECT * FROM t WHERE n = '\" + bar + \"'\";\n    db.createStatement().execute(sql); // SINK\n  }\n}\n";
    never("A.java", field, &two, "sql/concat");
    let lambda = "class A {\n  void other() {\n    Cleaner h = new Cleaner();\n  }\n  void doPost(HttpServletRequest request, java.util.List<Danger> hs) throws Exception {\n    String p = request.getParameter(\"v\");\n    hs.forEach(h -> {\n      String bar = h.clean(p);\n      String sql = \"SELECT * FROM t WHERE n = '\" + bar + \"'\";\n      db.createStatement().execute(sql); // SINK\n    });\n  }\n}\n";
    never("A.java", lambda, &two, "sql/concat");
    // The state of another file's object, or of a class.
    let filter = "class Filter {\n  public string Term;\n  public string Current() {\n    return Term;\n  }\n}\n";
    let cs_state = "class A {\n  void Page(HttpRequest request, SqlConnection conn) {\n    Filter f = new Filter();\n    f.Term = request.QueryString[\"q\"];\n    string q = f.Current();\n    var cmd = new SqlCommand(\"SELECT * FROM t WHERE n = '\" + q + \"'\", conn); // SINK\n  }\n}\n";
    never("A.cs", cs_state, &[("Filter.cs", filter)], "sql/concat");
    let ctx = "class Ctx {\n  static String user;\n  static String current() {\n    return Ctx.user;\n  }\n}\n";
    never(
        "A.java",
        &servlet("Ctx.user = param;", "Ctx.current()"),
        &[("Ctx.java", ctx)],
        "sql/concat",
    );
    never(
        "A.java",
        &servlet("Ctx.user = param;", "Ctx.user"),
        &[("Ctx.java", ctx)],
        "sql/concat",
    );
    // A member of a local object is a value, whatever its case.
    let form = "class A {\n  void doPost(HttpServletRequest request) throws Exception {\n    Form form = new Form(request);\n    String sql = \"SELECT * FROM t WHERE n = '\" + form.data.Name + \"'\";\n    db.createStatement().execute(sql); // SINK\n  }\n}\n";
    never("A.java", form, &[], "sql/concat");
}
