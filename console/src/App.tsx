import { useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, type ReactNode, useEffect, useMemo, useState } from "react";
import { ErrorMessage } from "./components/ui";
import { adminApi, userApi } from "./lib/api";
import type { Language } from "./lib/format";
import {
  dictionaries,
  type I18n,
  I18nContext,
  type MessageKey,
  preferredLanguage,
  useI18n,
} from "./lib/i18n";
import { AccountsPage, EventsPage, FxRatesPage, PricingPage } from "./pages/admin-pages";
import { LedgerStatusPage } from "./pages/ledger-status-page";
import { PlaygroundPage } from "./pages/playground-page";
import { AdminStatementPage, StatementPage } from "./pages/statement-page";
import { UsagePage } from "./pages/usage-page";
import { KeysPage, OverviewPage } from "./pages/user-pages";

const base = "/console";
const userRoutes = [
  { path: "/", label: "navOverview" },
  { path: "/keys", label: "navKeys" },
  { path: "/usage", label: "navUsage" },
  { path: "/playground", label: "navPlayground" },
  { path: "/statements", label: "navStatements" },
] as const satisfies readonly { path: string; label: MessageKey }[];
const adminRoutes = [
  { path: "/admin/accounts", label: "navAccounts" },
  { path: "/admin/pricing", label: "navPricing" },
  { path: "/admin/fx", label: "navFx" },
  { path: "/admin/events", label: "navEvents" },
  { path: "/admin/ledger", label: "navLedger" },
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
  useEffect(() => {
    const label = [...userRoutes, ...adminRoutes].find((route) => route.path === path)?.label;
    document.title = `${label ? `${dictionaries[language][label]} · ` : ""}${dictionaries[language].appName}`;
  }, [path, language]);
  return (
    <I18nContext.Provider value={i18n}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <Header path={path} navigate={navigate} />
      <main id="main">
        {isAdmin ? <AdminArea path={path} /> : <UserArea path={path} navigate={navigate} />}
      </main>
    </I18nContext.Provider>
  );
}

function Header({ path, navigate }: { path: string; navigate(path: string): void }) {
  const { t, language, setLanguage } = useI18n();
  const link = (route: { path: string; label: MessageKey }) => (
    <li key={route.path}>
      <a
        href={`${base}${route.path}`}
        aria-current={path === route.path ? "page" : undefined}
        onClick={(event) => {
          event.preventDefault();
          navigate(route.path);
        }}
      >
        {t(route.label)}
      </a>
    </li>
  );
  return (
    <header>
      <div className="brand">{t("appName")}</div>
      <nav aria-label={t("userSection")}>
        <ul>{userRoutes.map(link)}</ul>
      </nav>
      <nav aria-label={t("adminSection")}>
        <ul>{adminRoutes.map(link)}</ul>
      </nav>
      <label className="language">
        {t("language")}
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
  if (session.isPending) return <p>{t("loading")}</p>;
  if (!session.data) return <SignIn onSignedIn={() => void client.invalidateQueries()} />;
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
    case "/playground":
      page = <PlaygroundPage />;
      break;
    case "/statements":
      page = <StatementPage hasOrganization={hasOrganization} />;
      break;
    default:
      page = <OverviewPage userId={userId} organizationId={organizationId} />;
  }
  return (
    <>
      <div className="row spread">
        <span className="muted">
          {t("signedInAs")} {userId}
        </span>
        <button
          type="button"
          onClick={async () => {
            await userApi.signOut();
            client.clear();
            navigate("/");
            await client.invalidateQueries();
          }}
        >
          {t("signOut")}
        </button>
      </div>
      {page}
    </>
  );
}

function SignIn({ onSignedIn }: { onSignedIn(): void }) {
  const { t } = useI18n();
  const [error, setError] = useState<unknown>(null);
  const expiredLink = new URLSearchParams(window.location.search).get("signIn") === "expired";
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const token = String(new FormData(event.currentTarget).get("token") ?? "").trim();
    try {
      await userApi.signIn(token);
      onSignedIn();
    } catch (caught) {
      setError(caught);
    }
  }
  return (
    <section className="card narrow" aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">{t("signInTitle")}</h1>
      {expiredLink && <p className="warning">{t("signInExpired")}</p>}
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
      <ErrorMessage error={error} />
    </section>
  );
}

function AdminArea({ path }: { path: string }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const session = useQuery({ queryKey: ["admin-session"], queryFn: adminApi.session, retry: false });
  const [error, setError] = useState<unknown>(null);
  if (session.isPending) return <p>{t("loading")}</p>;
  if (session.isError) {
    const submit = async (event: FormEvent<HTMLFormElement>) => {
      event.preventDefault();
      const adminToken = String(new FormData(event.currentTarget).get("adminToken") ?? "").trim();
      try {
        await adminApi.signIn(adminToken);
        await client.invalidateQueries({ queryKey: ["admin-session"] });
      } catch (caught) {
        setError(caught);
      }
    };
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
        <ErrorMessage error={error} />
      </section>
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
    case "/admin/statements":
      page = <AdminStatementPage />;
      break;
    default:
      page = <AccountsPage />;
  }
  return (
    <>
      <div className="row spread">
        <span className="muted">admin</span>
        <button
          type="button"
          onClick={async () => {
            await adminApi.signOut();
            await client.invalidateQueries({ queryKey: ["admin-session"] });
          }}
        >
          {t("signOut")}
        </button>
      </div>
      {page}
    </>
  );
}
