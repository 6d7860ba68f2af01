import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, lazy, type ReactNode, Suspense, useEffect, useMemo, useRef, useState } from "react";
import { ErrorMessage } from "./components/ui";
import { ApiFailure, adminApi, userApi, whenRefusedForRole, whenUnauthenticated } from "./lib/api";
import type { Language } from "./lib/format";
import {
  dictionaries,
  type I18n,
  I18nContext,
  type MessageKey,
  preferredLanguage,
  useI18n,
} from "./lib/i18n";
import { ActivityPage } from "./pages/activity/activity-page";
import { EventsPage } from "./pages/events/events-page";
import { KeysPage } from "./pages/keys/keys-page";
import { LedgerStatusPage } from "./pages/ledger-status-page";
import { MembersPage } from "./pages/members/members-page";
import { organizationAccessQueryKey } from "./pages/members/use-organization-access";
import { ModelsPage } from "./pages/models-page";
import { OverviewPage } from "./pages/overview-page";
import { PlaygroundPage } from "./pages/playground/playground-page";
import { AdminStatementPage } from "./pages/statement/admin-statement-page";
import { StatementPage } from "./pages/statement/statement-page";
import { UpstreamsPage } from "./pages/upstreams-page";
import { WebhooksPage } from "./pages/webhooks/webhooks-page";

// The pages with charts (recharts is most of the bundle) load when first shown, not with the sign-in page;
// so do the accounts and pricing pages, which shared a module with the FX page's chart.
const UsagePage = lazy(() =>
  import("./pages/usage/usage-page").then((module) => ({ default: module.UsagePage })),
);
const AccountsPage = lazy(() =>
  import("./pages/accounts/accounts-page").then((module) => ({ default: module.AccountsPage })),
);
const PricingPage = lazy(() =>
  import("./pages/pricing/pricing-page").then((module) => ({ default: module.PricingPage })),
);
const FxRatesPage = lazy(() =>
  import("./pages/fx-rates/fx-rates-page").then((module) => ({ default: module.FxRatesPage })),
);

const base = "/console";
const userRoutes = [
  { path: "/", label: "navOverview" },
  { path: "/keys", label: "navKeys" },
  { path: "/usage", label: "navUsage" },
  { path: "/activity", label: "navActivity" },
  { path: "/models", label: "navModels" },
  { path: "/playground", label: "navPlayground" },
  { path: "/statements", label: "navStatements" },
  { path: "/members", label: "navMembers" },
  { path: "/webhooks", label: "navWebhooks" },
] as const satisfies readonly { path: string; label: MessageKey }[];
const adminRoutes = [
  { path: "/admin/accounts", label: "navAccounts" },
  { path: "/admin/pricing", label: "navPricing" },
  { path: "/admin/fx", label: "navFx" },
  { path: "/admin/events", label: "navEvents" },
  { path: "/admin/ledger", label: "navLedger" },
  { path: "/admin/upstreams", label: "navUpstreams" },
  { path: "/admin/statements", label: "navAdminStatements" },
] as const satisfies readonly { path: string; label: MessageKey }[];

function currentPath(): string {
  const path = window.location.pathname.startsWith(base) ? window.location.pathname.slice(base.length) : "/";
  return path === "" ? "/" : path;
}

/** The language the user chose (a preference, not a secret), else Korean when the browser asks for it. */
const languageStorageKey = "won-console.language";
function initialLanguage(): Language {
  const saved = window.localStorage.getItem(languageStorageKey);
  if (saved === "ko" || saved === "en") return saved;
  return preferredLanguage(navigator.languages);
}

export function App() {
  const [language, setLanguageState] = useState<Language>(initialLanguage);
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const onPop = () => setPath(currentPath());
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, []);
  useEffect(() => {
    document.documentElement.lang = language;
  }, [language]);
  const i18n = useMemo<I18n>(
    () => ({
      language,
      t: (key) => dictionaries[language][key],
      setLanguage: (next) => {
        window.localStorage.setItem(languageStorageKey, next);
        setLanguageState(next);
      },
    }),
    [language],
  );
  const navigate = (next: string) => {
    window.history.pushState(null, "", `${base}${next}`);
    setPath(next);
  };
  const isAdmin = path.startsWith("/admin");
  const client = useQueryClient();
  // A call refused as unauthenticated: the session is asked again, and the area shows what it says now.
  useEffect(
    () =>
      whenUnauthenticated((realm) => {
        void client.invalidateQueries({ queryKey: [realm === "user" ? "session" : "admin-session"] });
      }),
    [client],
  );
  // A call refused for the session's role: the role is read again, and the pages offer what it may do now.
  useEffect(
    () =>
      whenRefusedForRole(() => {
        void client.invalidateQueries({ queryKey: organizationAccessQueryKey });
      }),
    [client],
  );
  return (
    <I18nContext.Provider value={i18n}>
      <a className="skip-link" href="#main">
        {dictionaries[language].skipToContent}
      </a>
      <Header path={path} navigate={navigate} />
      <main id="main">
        <Suspense fallback={<p>{dictionaries[language].loading}</p>}>
          {isAdmin ? (
            <AdminArea path={path} navigate={navigate} />
          ) : (
            <UserArea path={path} navigate={navigate} />
          )}
        </Suspense>
      </main>
    </I18nContext.Provider>
  );
}

/** The page's title: its label (none: the overview), then the console's name. */
function useDocumentTitle(label: MessageKey | undefined) {
  const { t } = useI18n();
  useEffect(() => {
    document.title = `${label ? `${t(label)} · ` : ""}${t("appName")}`;
  }, [label, t]);
}

function routeLabelOf(path: string): MessageKey | undefined {
  return [...userRoutes, ...adminRoutes].find((route) => route.path === path)?.label;
}

/** Links of one nav; the current page is marked for assistive technology and styling. */
function NavLinks({
  routes,
  path,
  navigate,
}: {
  routes: readonly { path: string; label: MessageKey; current?: boolean }[];
  path: string;
  navigate(path: string): void;
}) {
  const { t } = useI18n();
  return (
    <ul>
      {routes.map((route) => (
        <li key={route.path}>
          <a
            href={`${base}${route.path}`}
            aria-current={(route.current ?? path === route.path) ? "page" : undefined}
            onClick={(event) => {
              event.preventDefault();
              navigate(route.path);
            }}
          >
            {t(route.label)}
          </a>
        </li>
      ))}
    </ul>
  );
}

/**
 * One band at a laptop's width: the brand, the user's pages, one "Admin" link (admins only: the admin pages
 * have their own nav inside the admin area) and the language.
 */
function Header({ path, navigate }: { path: string; navigate(path: string): void }) {
  const { t, language, setLanguage } = useI18n();
  // Admin links only for a valid admin cookie: a user never sees pages that would only ask for a token. Asked
  // only where an admin signed in on this browser, so no user's page logs a 401 for it.
  const adminSession = useQuery({
    queryKey: ["admin-session"],
    queryFn: adminApi.session,
    retry: false,
    enabled: adminApi.mayBeSignedIn(),
  });
  // The members page only for a session of an organization: read from the user area's session, never asked
  // for here (an admin page has no user session to ask about).
  const session = useQuery({ queryKey: ["session"], queryFn: userApi.session, enabled: false });
  const pages = session.data?.organizationId
    ? userRoutes
    : userRoutes.filter(({ path }) => path !== "/members");
  const routes = adminSession.isSuccess
    ? [
        ...pages,
        { path: adminRoutes[0].path, label: "navAdmin" as const, current: path.startsWith("/admin") },
      ]
    : pages;
  return (
    <header>
      <div className="brand">{t("appName")}</div>
      <nav aria-label={t("userSection")}>
        <NavLinks routes={routes} path={path} navigate={navigate} />
      </nav>
      <label className="language">
        <span className="visually-hidden">{t("language")}</span>
        <select value={language} onChange={(event) => setLanguage(event.target.value as Language)}>
          <option value="ko" lang="ko">
            한국어
          </option>
          <option value="en" lang="en">
            English
          </option>
        </select>
      </label>
    </header>
  );
}

function UserArea({ path, navigate }: { path: string; navigate(path: string): void }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const session = useQuery({ queryKey: ["session"], queryFn: userApi.session, retry: false });
  // Kept by the query after a refetch fails: a session that was here, ended only when the gateway says so.
  // One it could not be asked about (unreachable, a 503) stays, with what its page holds: the page's next
  // call says what failed.
  const signedIn = session.data !== undefined && !isUnauthenticated(session.error);
  const identity = session.data && `${session.data.userId} ${session.data.organizationId ?? ""}`;
  const changedFrom = useSessionChange(signedIn ? identity : undefined);
  useDocumentTitle(signedIn ? routeLabelOf(path) : "signInTitle");
  if (session.isPending) return <p>{t("loading")}</p>;
  if (!signedIn)
    return <SignIn ended={session.data !== undefined} onSignedIn={() => void client.invalidateQueries()} />;
  const { userId, organizationId } = session.data;
  const hasOrganization = organizationId !== null;
  let page: ReactNode;
  switch (path) {
    case "/keys":
      page = <KeysPage hasOrganization={hasOrganization} />;
      break;
    case "/usage":
      page = <UsagePage hasOrganization={hasOrganization} />;
      break;
    case "/activity":
      page = <ActivityPage hasOrganization={hasOrganization} />;
      break;
    case "/models":
      page = <ModelsPage hasOrganization={hasOrganization} />;
      break;
    case "/playground":
      page = <PlaygroundPage hasOrganization={hasOrganization} />;
      break;
    case "/statements":
      page = <StatementPage hasOrganization={hasOrganization} />;
      break;
    case "/members":
      page = <MembersPage hasOrganization={hasOrganization} />;
      break;
    case "/webhooks":
      page = <WebhooksPage hasOrganization={hasOrganization} />;
      break;
    default:
      page = <OverviewPage />;
  }
  return (
    <>
      {/* Keyed by who: a failed sign-out of one session is not said under another's. */}
      <SessionBar
        key={identity}
        userId={userId}
        organizationId={organizationId}
        onSignedOut={async () => {
          // Nothing of this session stays cached, and the session is asked again (whatever the page).
          client.removeQueries({ predicate: (query) => query.queryKey[0] !== "session" });
          navigate("/");
          await client.resetQueries({ queryKey: ["session"] });
        }}
      />
      {changedFrom !== undefined && (
        <p role="status" className="warning" data-testid="session-changed">
          {t("sessionChanged")}
        </p>
      )}
      {page}
    </>
  );
}

/**
 * Who is signed in, and Sign out. A sign-out the gateway did not record (a 5xx, the gateway out of reach)
 * leaves the session live on the gateway: the page stays signed in and says the sign-out failed, rather than
 * look as if nothing had been asked.
 */
function SessionBar(props: { userId: string; organizationId: string | null; onSignedOut(): Promise<void> }) {
  const { t } = useI18n();
  const signOut = useMutation({
    // Refused only when the cookie is another session's now (whenUnauthenticated asks again).
    mutationFn: () => userApi.signOut().then(() => true, unauthenticatedAsFalse),
    onSuccess: async (signedOut) => {
      if (signedOut) await props.onSignedOut();
    },
  });
  return (
    <>
      <div className="row spread session-bar">
        <span className="muted" data-testid="signed-in-as">
          {t("signedInAs")} <strong>{props.userId}</strong>
          {props.organizationId ? ` · ${t("organization")} ${props.organizationId}` : ""}
        </span>
        <button type="button" disabled={signOut.isPending} onClick={() => signOut.mutate()}>
          {t("signOut")}
        </button>
      </div>
      <ErrorMessage error={signOut.error} failed="signOutFailed" />
    </>
  );
}

/** The admin's bar: a sign-out that failed is said, as a user's, and the admin stays signed in. */
function AdminSessionBar({ onSignedOut }: { onSignedOut(): void }) {
  const { t } = useI18n();
  const signOut = useMutation({
    // A 401: the admin cookie had already ended, so there is nothing left to sign out.
    mutationFn: () => adminApi.signOut().catch(unauthenticatedAsFalse),
    onSuccess: onSignedOut,
  });
  return (
    <>
      <div className="row spread session-bar">
        <span className="muted">{t("signedInAsAdmin")}</span>
        <button type="button" disabled={signOut.isPending} onClick={() => signOut.mutate()}>
          {t("signOut")}
        </button>
      </div>
      <ErrorMessage error={signOut.error} failed="signOutFailed" />
    </>
  );
}

/**
 * Another tab signed someone else in (the cookie is the browser's, not the tab's): what this tab cached of
 * the previous session is dropped and asked again, and the change is said. Returns the previous identity.
 */
function useSessionChange(identity: string | undefined): string | undefined {
  const client = useQueryClient();
  const shown = useRef(identity);
  const [changedFrom, setChangedFrom] = useState<string | undefined>();
  useEffect(() => {
    if (identity === undefined) {
      // Signed out, or the session ended: whoever signs in next is not a change made in another tab.
      shown.current = undefined;
      setChangedFrom(undefined);
      return;
    }
    const previous = shown.current;
    shown.current = identity;
    if (previous === undefined || previous === identity) return;
    setChangedFrom(previous);
    void client.resetQueries({ predicate: (query) => query.queryKey[0] !== "session" });
  }, [identity, client]);
  return identity === undefined ? undefined : changedFrom;
}

function isUnauthenticated(error: unknown): boolean {
  return error instanceof ApiFailure && error.httpStatus === 401;
}

function unauthenticatedAsFalse(error: unknown): false {
  if (isUnauthenticated(error)) return false;
  throw error;
}

function SignIn({ ended, onSignedIn }: { ended: boolean; onSignedIn(): void }) {
  const { t } = useI18n();
  const [error, setError] = useState<unknown>(null);
  // An API key pasted here is a newcomer's slip: a refusal then says which credential the console takes.
  const [refusedApiKey, setRefusedApiKey] = useState(false);
  const expiredLink = new URLSearchParams(window.location.search).get("signIn") === "expired";
  const options = useQuery({ queryKey: ["sign-in-options"], queryFn: userApi.signInOptions, retry: false });
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const token = String(new FormData(event.currentTarget).get("token") ?? "").trim();
    try {
      await userApi.signIn(token);
      onSignedIn();
    } catch (caught) {
      setRefusedApiKey(token.startsWith("svc_"));
      setError(caught);
    }
  }
  return (
    <section className="card narrow" aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">{t("signInTitle")}</h1>
      {expiredLink && <p className="warning">{t("signInExpired")}</p>}
      {ended && !expiredLink && (
        <p className="warning" role="status" data-testid="session-ended">
          {t("sessionEnded")}
        </p>
      )}
      {options.data?.oidc && (
        // A plain navigation: the gateway answers with the redirect to the identity provider.
        <form method="get" action={`${base}/sign-in/oidc`} className="stack">
          <button type="submit" className="primary">
            {t("signInWithOidc")}
          </button>
          <p className="muted">{t("signInOr")}</p>
        </form>
      )}
      <p className="muted">{t("signInHelp")}</p>
      <form className="stack" onSubmit={(event) => void submit(event)}>
        <label>
          {t("sessionToken")}
          <input name="token" type="password" autoComplete="off" required />
        </label>
        <button type="submit" className="primary">
          {t("signIn")}
        </button>
      </form>
      <ErrorMessage
        error={error}
        unauthenticated={refusedApiKey ? "apiKeyIsNoSessionToken" : "invalidToken"}
      />
      <p className="muted">
        <a href={`${base}/admin/accounts`}>{t("adminSignInLink")}</a>
      </p>
    </section>
  );
}

function AdminArea({ path, navigate }: { path: string; navigate(path: string): void }) {
  const { t } = useI18n();
  const client = useQueryClient();
  // Without the sign-in hint there is nothing to ask: the token form, and no 401 in the browser's console.
  const [mayBeSignedIn, setMayBeSignedIn] = useState(adminApi.mayBeSignedIn);
  const session = useQuery({
    queryKey: ["admin-session"],
    queryFn: adminApi.session,
    retry: false,
    enabled: mayBeSignedIn,
  });
  // As a user's: refused by the gateway, or never read; not one the gateway could not be asked about.
  const signedIn = mayBeSignedIn && session.data !== undefined && !isUnauthenticated(session.error);
  useDocumentTitle(signedIn ? routeLabelOf(path) : "adminSignInTitle");
  if (mayBeSignedIn && session.isPending) return <p>{t("loading")}</p>;
  if (!signedIn) {
    return (
      <AdminSignIn
        onSignedIn={async () => {
          setMayBeSignedIn(true);
          await client.invalidateQueries({ queryKey: ["admin-session"] });
        }}
      />
    );
  }
  let page: ReactNode;
  switch (path) {
    case "/admin/pricing":
      page = <PricingPage />;
      break;
    case "/admin/fx":
      page = <FxRatesPage />;
      break;
    case "/admin/events":
      page = <EventsPage />;
      break;
    case "/admin/ledger":
      page = <LedgerStatusPage />;
      break;
    case "/admin/upstreams":
      page = <UpstreamsPage />;
      break;
    case "/admin/statements":
      page = <AdminStatementPage />;
      break;
    default:
      page = <AccountsPage />;
  }
  return (
    <>
      <AdminSessionBar
        onSignedOut={() => {
          setMayBeSignedIn(false);
          client.removeQueries({ queryKey: ["admin-session"] });
        }}
      />
      <nav aria-label={t("adminSection")} className="subnav">
        <NavLinks routes={adminRoutes} path={path} navigate={navigate} />
      </nav>
      {page}
    </>
  );
}

/** The admin token form. A token the gateway refuses is said so, in the page's language. */
function AdminSignIn({ onSignedIn }: { onSignedIn(): Promise<void> }) {
  const { t } = useI18n();
  const [error, setError] = useState<unknown>(null);
  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const adminToken = String(new FormData(event.currentTarget).get("adminToken") ?? "").trim();
    try {
      await adminApi.signIn(adminToken);
      setError(null);
      await onSignedIn();
    } catch (caught) {
      setError(caught);
    }
  };
  const refused = error instanceof ApiFailure && error.httpStatus === 401;
  return (
    <section className="card narrow" aria-labelledby="admin-sign-in-title">
      <h1 id="admin-sign-in-title">{t("adminSignInTitle")}</h1>
      <p className="muted">{t("adminSignInHelp")}</p>
      <form className="stack" onSubmit={(event) => void submit(event)}>
        <label>
          {t("adminToken")}
          <input name="adminToken" type="password" autoComplete="off" required />
        </label>
        <button type="submit" className="primary">
          {t("signIn")}
        </button>
      </form>
      {refused ? (
        <p role="alert" className="error" data-testid="admin-token-refused">
          {t("adminTokenRefused")}
        </p>
      ) : (
        <ErrorMessage error={error} />
      )}
    </section>
  );
}
