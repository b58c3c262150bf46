"""Word lists the keyless extractor types names with: short, written for it, and loaded once.

Places come from ``data/places.txt`` (countries, continents, US states and cities of 250k+ people, from GeoNames,
CC BY 4.0); the rest is here. A list decides a *type* only: whether a capitalised word is a name at all is
decided by :mod:`.extract` from where and how it is written.
"""

from __future__ import annotations

import functools
from pathlib import Path

# capitalised at the start of a sentence, or as a title, but not names
NOT_NAMES = frozenset("""
a an the i i'm i've i'd i'll we you he she it they me us him them this that these those my our your his her their its
what when where who whom whose why how which if but and or so yes no not hi hey hello thanks thank oh ok okay well
just also then there here today tonight tomorrow yesterday maybe sure great nice good wow please let do did does is
are was were be been have has had can could will would should may might must sounds really actually anyway awesome
cool love glad sorry haha lol omg btw fyi anyone everyone someone something nothing everything all any some each every
both either neither one two three four five six seven eight nine ten first second third last next new old other
after before since until during while because though although however therefore also still even only never always
often sometimes usually again once twice as at by for from in into of on onto over to under up with without about
above across against along among around behind below beside between beyond down inside near off out outside past
through toward upon within monday tuesday wednesday thursday friday saturday sunday january february march april june
july august september october november december mon tue wed thu fri sat sun jan feb mar apr jun jul aug sep sept oct
nov dec morning evening afternoon night week weekend month year day christmas easter halloween thanksgiving
mom dad mum mother father sister brother grandma grandpa aunt uncle wife husband son daughter friend friends kids
congrats congratulations totally definitely absolutely exactly honestly seriously basically yeah yep nope hmm
sir madam dear hope wish enjoy take make get got go going went come came see saw look looks looking know knew think
thought feel felt tell told said say says ask asked want wanted need needed try tried keep kept give gave use used
note notes todo done fixed added removed updated changed moved merged deployed released decided agreed user assistant
ceo cto cfo vp hr pr ci cd qa ui ux id api url sdk cli os db ip dns ssh http https json yaml csv pdf html css sql
tl;dr eta asap tbd n/a am pm utc gmt est pst ok mr mrs ms dr prof
""".split())

ORG_SUFFIXES = frozenset("""
inc inc. ltd ltd. llc corp corp. corporation company co co. gmbh ag sa plc labs lab university college school
institute bank group foundation association society agency department ministry council hospital clinic club team
studio studios partners capital ventures technologies technology systems software media press church center centre
committee fund union airlines airways motors holdings industries consulting solutions network networks bakery cafe
restaurant shop store market bar pharmacy museum library gallery theatre theater academy
""".split())

PLACE_SUFFIXES = frozenset("""
city street st avenue ave road rd park lake river mountain mountains mount beach island islands bay valley county
province state coast peninsula canyon falls forest desert sea ocean square bridge harbor harbour airport station
""".split())

PERSON_TITLES = frozenset("mr mr. mrs mrs. ms ms. dr dr. prof prof. sir dame".split())

SERVICE_HEADS = frozenset("""
service services worker workers api server servers queue pipeline cluster database db daemon job bot gateway cache
scheduler backend frontend dashboard endpoint microservice proxy broker bucket cron runner indexer crawler monitor
portal store warehouse lake consumer producer listener webhook replica shard
""".split())

# modifiers that make "the new worker" a description, not the name of a service
NOT_MODIFIERS = NOT_NAMES | frozenset("""
same main whole big small little large huge tiny good bad best worst only entire real actual current previous own
local remote public private shared slow fast old new different various several many few more most less least such
""".split())

# tools and libraries people name without a version; a name here is typed a product, not a person
TECH = frozenset("""
python java javascript typescript golang rust ruby perl php kotlin swift scala haskell elixir erlang clojure julia
node nodejs deno bun react vue angular svelte nextjs django flask fastapi rails spring laravel express pandas numpy
scipy pytorch tensorflow keras jax sklearn scikit-learn polars spark hadoop flink kafka redis memcached postgres
postgresql mysql mariadb sqlite mongodb mongo cassandra clickhouse elasticsearch opensearch qdrant weaviate pinecone
milvus chroma neo4j duckdb snowflake bigquery redshift dynamodb s3 lambda ec2 kubernetes k8s docker podman helm
terraform ansible puppet chef nginx apache caddy traefik envoy istio linkerd prometheus grafana datadog sentry
kibana logstash jenkins github gitlab bitbucket jira confluence slack discord zoom notion figma linear trello asana
vscode vim emacs intellij pycharm xcode android ios macos windows linux ubuntu debian fedora centos alpine arch
chrome firefox safari edge openai anthropic claude chatgpt gpt llama mistral gemini copilot cursor langchain
langgraph llamaindex celery rabbitmq nats zeromq grpc graphql rest webpack vite babel eslint prettier pytest jest
mocha cypress playwright selenium airflow dagster prefect dbt looker tableau metabase superset stripe twilio
sendgrid auth0 okta vercel netlify heroku cloudflare aws azure gcp firebase supabase iphone ipad macbook pixel
galaxy kindle playstation xbox nintendo switch tesla excel word powerpoint outlook gmail photoshop lightroom
blender unity unreal spotify netflix youtube instagram tiktok twitter facebook whatsapp telegram signal uber lyft
airbnb
""".split())


@functools.lru_cache(maxsize=1)
def places() -> frozenset[str]:
    """Casefolded place names (one a line in ``data/places.txt``; ``#`` lines are comments)."""
    path = Path(__file__).with_name("data") / "places.txt"
    lines = path.read_text("utf-8").splitlines()
    return frozenset(line.strip().casefold() for line in lines if line.strip() and not line.startswith("#"))


__all__ = ["NOT_MODIFIERS", "NOT_NAMES", "ORG_SUFFIXES", "PERSON_TITLES", "PLACE_SUFFIXES", "SERVICE_HEADS",
           "TECH", "places"]
