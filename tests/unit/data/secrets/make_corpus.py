#!/usr/bin/env python3
"""Write the secrets scanner's false-positive corpus: ordinary memory text on
which no detector may fire.

    make_corpus.py > corpus.txt

The output is committed (tests/unit/data/secrets/corpus.txt) and the unit
test checks it is what this script makes, so the corpus can be read and
reviewed as plain text and still be regenerated. It mixes what memory files
hold: notes and prose with numbers, code in several languages, configuration
that names secrets without holding them, UUIDs, git SHAs, hex digests, base64
data, URLs without passwords, and numbers of every ordinary kind (times,
phone numbers, order ids, ISBNs, versions, amounts).
"""
import base64
import hashlib
import random
import string
import sys
import uuid

R = random.Random(20261122)
WORDS = ("the parser tokenizer deploy staging release build cache queue worker user team "
         "schema migration index table column request response handler retry timeout "
         "budget meeting review customer invoice report draft summary feature flag test "
         "fixture module package library endpoint service cluster node region bucket "
         "notes decision todo done blocked waiting owner reviewer sprint backlog bug fix "
         "latency memory disk network config setting secret password token key vault "
         "rotate expire access policy role permission audit log metric alert dashboard").split()
NAMES = ["Alice", "Bob", "Carol", "Dmitri", "Erin", "Farah", "Gustavo", "Hiro", "Ines", "Jamal"]
LANGS = ["Python", "Go", "Rust", "TypeScript", "C", "Java", "Kotlin", "Ruby"]
HOSTS = ["db.internal", "cache-01.prod", "api.example.com", "build.local", "10.0.3.17",
         "staging.acme.io", "localhost"]


def words(n):
    return " ".join(R.choice(WORDS) for _ in range(n))


def sentence():
    s = words(R.randint(5, 14))
    return s[0].upper() + s[1:] + R.choice([".", ".", ".", "?", "!", ":"])


def sha1():
    return hashlib.sha1(str(R.random()).encode()).hexdigest()


def sha256():
    return hashlib.sha256(str(R.random()).encode()).hexdigest()


def b64(n):
    return base64.b64encode(bytes(R.randrange(256) for _ in range(n))).decode()


def ident():
    return "_".join(R.choice(WORDS) for _ in range(R.randint(1, 3)))


def number_line():
    kinds = [
        lambda: f"Order #{R.randint(10**7, 10**10)} shipped on 2026-{R.randint(1,12):02d}-{R.randint(1,28):02d}.",
        lambda: f"Call {R.choice(NAMES)} at +1 {R.randint(200,999)} {R.randint(200,999)} {R.randint(1000,9999)} after {R.randint(1,11)} pm.",
        lambda: f"Revenue was ${R.randint(1,999)},{R.randint(100,999)},{R.randint(100,999)} in Q{R.randint(1,4)} ({R.randint(1,40)}% up).",
        lambda: f"timestamp_ms={R.randint(1600000000000, 1800000000000)} took {R.randint(1,900)} ms",
        lambda: f"ISBN 978-{R.randint(0,1)}-{R.randint(100,999)}-{R.randint(10000,99999)}-{R.randint(0,9)}",
        lambda: f"ISBN {R.randint(9780000000000, 9799999999999)}",
        lambda: f"Upgraded to v{R.randint(0,9)}.{R.randint(0,30)}.{R.randint(0,99)} (build {R.randint(1000,99999)}).",
        lambda: f"Ping {R.randint(1,255)}.{R.randint(0,255)}.{R.randint(0,255)}.{R.randint(1,254)}: {R.random()*90:.3f} ms",
        lambda: f"pi is about {R.random()+3:.15f} and e about {R.random()+2:.15f}",
        lambda: f"Tracking number {R.randint(10**11, 10**12 - 1)} (FedEx), message id {R.randint(10**17, 2*10**18)}.",
        lambda: f"Snowflake {R.randint(1000000000000000000, 1999999999999999999)} posted {R.randint(2,59)} minutes ago.",
        lambda: f"Population {R.randint(1,9)} {R.randint(100,999)} {R.randint(100,999)} in {R.randint(1900,2025)}.",
        lambda: f"Coordinates {R.uniform(-90,90):.6f}, {R.uniform(-180,180):.6f}",
        lambda: f"The run used {R.randint(1,64)} cores, {R.randint(1,512)} GiB and {R.randint(10**6, 10**9)} rows.",
        lambda: f"Invoice INV-{R.randint(2020,2026)}-{R.randint(1000,99999)} for {R.randint(10,9999)}.{R.randint(0,99):02d} EUR",
        lambda: f"| {R.randint(1,999)} | {R.randint(1,99999)} | {R.random():.4f} | {R.randint(-50,50)} |",
        lambda: f"Phone: ({R.randint(200,999)}) {R.randint(200,999)}-{R.randint(1000,9999)}; fax {R.randint(200,999)}-{R.randint(200,999)}-{R.randint(1000,9999)}",
        lambda: f"Line {R.randint(1,5000)}, column {R.randint(1,200)}: expected {R.randint(0,99)} got {R.randint(0,99)}",
        lambda: f"sizes: {', '.join(str(R.randint(1, 10**6)) for _ in range(R.randint(3,8)))}",
    ]
    return R.choice(kinds)()


def id_line():
    kinds = [
        lambda: f"Request {uuid.UUID(int=R.getrandbits(128), version=4)} failed with 503.",
        lambda: f"- memory_id: {uuid.UUID(int=R.getrandbits(128), version=4)}",
        lambda: f"commit {sha1()}",
        lambda: f"Merged {sha1()[:7]} into main ({words(4)}).",
        lambda: f"{sha256()}  dist/{ident()}.tar.gz",
        lambda: f"sha256:{sha256()}",
        lambda: f"docker pull registry.local/{ident()}@sha256:{sha256()}",
        lambda: f"md5 {hashlib.md5(str(R.random()).encode()).hexdigest()} etag \"{hashlib.md5(str(R.random()).encode()).hexdigest()}\"",
        lambda: f"data:image/png;base64,{b64(R.randint(24, 90))}",
        lambda: f"payload = \"{b64(R.randint(16, 60))}\"",
        lambda: f"{b64(57)}",
        lambda: f"\"blob\": \"{b64(R.randint(30, 120))}\",",
        lambda: f"Parent {sha1()} and tree {sha1()}",
        lambda: f"trace_id={sha256()[:32]} span_id={sha256()[:16]}",
        lambda: f"ETag: W/\"{sha1()[:20]}\"",
        lambda: f"ULID 01{''.join(R.choice('0123456789ABCDEFGHJKMNPQRSTVWXYZ') for _ in range(24))}",
        lambda: f"session {sha256()[:40]} ended after {R.randint(1,120)} minutes",
        lambda: "base64 of a config: " + base64.b64encode(
            ('{"%s": %d}' % (ident(), R.randint(1, 99))).encode()).decode(),
    ]
    return R.choice(kinds)()


def config_line():
    var = R.choice(["DB_PASSWORD", "API_KEY", "STRIPE_SECRET_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
                    "OPENAI_API_KEY", "SECRET_KEY", "ANTHROPIC_API_KEY", "SLACK_BOT_TOKEN"])
    kinds = [
        lambda: f"{var}=${{{var}}}",
        lambda: f"{var}=",
        lambda: f"export {var}=\"$(vault kv get -field=value secret/{ident()})\"",
        lambda: f"password = os.environ[\"{var}\"]",
        lambda: f"api_key = os.getenv(\"{var}\")",
        lambda: f"secret_key = settings.SECRET_KEY",
        lambda: f"const apiKey = process.env.{var};",
        lambda: f"  password: ${{{{ secrets.{var} }}}}",
        lambda: f"  api_key: <your-api-key>",
        lambda: f"password: \"{{{{ vault_{ident()} }}}}\"",
        lambda: f"def check_password(pwd: str) -> bool:",
        lambda: f"    if not verify(password, user.password_hash):",
        lambda: f"password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
        lambda: f"secret = secrets.token_hex({R.choice([16, 32, 64])})",
        lambda: f"token = request.headers.get(\"Authorization\", \"\").removeprefix(\"Bearer \")",
        lambda: f"The {var} lives in 1Password under \"{R.choice(NAMES)}'s vault\"; never paste it here.",
        lambda: f"Rotate the {R.choice(['API key', 'password', 'secret', 'token'])} every {R.randint(30, 90)} days.",
        lambda: f"password reset emails go out from noreply@{R.choice(HOSTS)}",
        lambda: f"secret: keep the {words(2)} simple",
        lambda: f"Password: see the team vault",
        lambda: f"api_key_created: {R.randint(1600000000000, 1800000000000)}",
        lambda: "pwd = " + R.choice(["os.getcwd()", "Path.cwd()", 'pathlib.Path(".")']),
        lambda: f"PWD=/home/{R.choice(NAMES).lower()}/src/{ident()}",
        lambda: f"cd \"$(pwd)/build\" && make -j{R.randint(1,16)}",
        lambda: f"client_secret: !Ref ClientSecret",
        lambda: f"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        lambda: f"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        lambda: f"stripe_key = \"sk_test_xxxxxxxxxxxxxxxxxxxxxxxx\"",
        lambda: f"GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        lambda: f"password=changeme-{R.randint(1,9)}",
        lambda: f"--password-file /run/secrets/{ident()}",
        lambda: f"if password == confirm_password:",
        lambda: f"std::string secret::Store::get(const Key& k) const;",
        lambda: f"\"password\": null,",
        lambda: f"\"password\": \"\",",
        lambda: f"api-key: {R.choice(['required', 'optional', 'deprecated'])}",
        lambda: f"access_token expires_in={R.randint(300, 86400)}",
    ]
    return R.choice(kinds)()


def url_line():
    kinds = [
        lambda: f"See https://{R.choice(HOSTS)}/docs/{ident()}?page={R.randint(1,9)}#section-{R.randint(1,9)}",
        lambda: f"git clone git@github.com:{R.choice(NAMES).lower()}/{ident()}.git",
        lambda: f"git clone ssh://git@gitlab.{R.choice(['com', 'internal'])}:2222/{ident()}.git",
        lambda: f"MEMTOOL_STORE=postgresql://memtool@{R.choice(HOSTS)}/memtool",
        lambda: f"redis://{R.choice(HOSTS)}:6379/{R.randint(0,15)}",
        lambda: f"DATABASE_URL=postgres://{R.choice(['app', 'memtool'])}:${{DB_PASSWORD}}@{R.choice(HOSTS)}:5432/app",
        lambda: f"amqp://guest:guest@localhost:5672/",
        lambda: f"mongodb://user:password@{R.choice(HOSTS)}:27017",
        lambda: f"http://localhost:{R.randint(1024, 65535)}/api/v{R.randint(1,3)}/{ident()}",
        lambda: f"mailto:{R.choice(NAMES).lower()}@example.org",
        lambda: f"https://user@{R.choice(HOSTS)}/path/{sha1()[:8]}",
        lambda: f"https://example.com/search?q=a:b@c&lang=en",
        lambda: f"file:///var/lib/memtool/{ident()}",
        lambda: f"https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        lambda: f"ftp://anonymous:@{R.choice(HOSTS)}/pub",
    ]
    return R.choice(kinds)()


def code_block():
    lang = R.choice(["py", "c", "js", "sh", "sql", "go", "yaml"])
    n = ident()
    if lang == "py":
        return ["```python", f"def {n}(items, limit={R.randint(1, 100)}):",
                f"    \"\"\"{sentence()}\"\"\"", "    out = []", "    for i, item in enumerate(items):",
                f"        if i >= limit or item.get(\"{R.choice(WORDS)}\") is None:", "            break",
                f"        out.append(item[\"{R.choice(WORDS)}\"] * {R.randint(2, 9)})", "    return out", "```"]
    if lang == "c":
        return ["```c", f"static int {n}(const char *s, size_t len)", "{", "    size_t i;",
                f"    for (i = 0; i < len; i++)", f"        if (s[i] == '{R.choice('abcxyz')}')",
                f"            return {R.randint(0, 9)};", "    return -1;", "}", "```"]
    if lang == "js":
        return ["```js", f"export async function {n.replace('_', '')}(req) {{",
                f"  const res = await fetch(`/api/${{req.id}}/{R.choice(WORDS)}`);",
                f"  if (!res.ok) throw new Error(`HTTP ${{res.status}}`);", "  return res.json();", "}", "```"]
    if lang == "sh":
        return ["```sh", f"for f in build/*.{R.choice(['o', 'log', 'json'])}; do",
                f"  sha256sum \"$f\" | cut -c1-{R.randint(8, 64)}", "done",
                f"tar czf /tmp/{n}-$(date +%s).tgz build/", "```"]
    if lang == "sql":
        return ["```sql", f"SELECT id, {R.choice(WORDS)}, created_at FROM {n}",
                f"WHERE created_at > now() - interval '{R.randint(1, 30)} days'",
                f"ORDER BY id DESC LIMIT {R.randint(10, 500)};", "```"]
    if lang == "go":
        return ["```go", f"func {n.title().replace('_', '')}(ctx context.Context, id string) error {{",
                f"\tctx, cancel := context.WithTimeout(ctx, {R.randint(1, 30)}*time.Second)", "\tdefer cancel()",
                f"\treturn db.QueryRowContext(ctx, \"SELECT 1 FROM {n} WHERE id = $1\", id).Err()", "}", "```"]
    return ["```yaml", f"{n}:", f"  replicas: {R.randint(1, 9)}", f"  image: registry.local/{n}:{R.randint(1, 40)}",
            f"  env:", f"    - name: LOG_LEVEL", f"      value: {R.choice(['debug', 'info', 'warn'])}",
            f"    - name: DB_PASSWORD", f"      valueFrom: {{secretKeyRef: {{name: {n}, key: password}}}}", "```"]


def note_block():
    out = [f"# {words(R.randint(2, 5)).title()}", ""]
    for _ in range(R.randint(2, 6)):
        out.append(f"- {sentence()}")
    out.append(f"- [{R.choice([' ', 'x'])}] {R.choice(NAMES)} to {words(3)} by 2026-{R.randint(1,12):02d}-{R.randint(1,28):02d}")
    out.append(f"Prefers {R.choice(LANGS)} for {words(2)}; uses {R.choice(['pytest -q', 'make check', 'cargo test', 'npm test'])}.")
    out.append("")
    return out


def main():
    lines = []
    makers = [number_line, id_line, config_line, url_line]
    while len(lines) < 2600:
        pick = R.random()
        if pick < 0.12:
            lines.extend(code_block())
        elif pick < 0.22:
            lines.extend(note_block())
        elif pick < 0.32:
            lines.append(sentence() + " " + sentence())
        else:
            lines.append(R.choice(makers)())
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
