import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
// The global styles first: each component imports its own stylesheet, and
// Vite orders CSS by import order, so these stay under every component's rules.
import './styles/tokens.css';
import './styles/base.css';
import './styles/controls.css';
import { shouldRetry } from './api/queries';
import { App } from './App';
import { SettingsProvider } from './components/SettingsContext';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: { retry: shouldRetry, refetchOnWindowFocus: true, refetchIntervalInBackground: false },
  },
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <SettingsProvider>
      <QueryClientProvider client={queryClient}>
        <BrowserRouter>
          <App />
        </BrowserRouter>
      </QueryClientProvider>
    </SettingsProvider>
  </StrictMode>,
);
