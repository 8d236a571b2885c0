import { Navigate, Route, Routes } from 'react-router';
import { Shell } from './components/Shell';
import { AboutPage } from './pages/About';
import { ActionDetailPage } from './pages/ActionDetail';
import { ActionsPage } from './pages/Actions';
import { HomePage } from './pages/Home';
import { JobDetailPage } from './pages/JobDetail';
import { LoginPage } from './pages/Login';
import { NotFoundPage } from './pages/NotFound';
import { RunDetailPage } from './pages/RunDetail';
import { RunsPage } from './pages/Runs';
import { RuntimeDetailPage } from './pages/RuntimeDetail';
import { RuntimesPage } from './pages/Runtimes';
import { SettingsPage } from './pages/Settings';
import { WorkflowRunDetailPage } from './pages/WorkflowRunDetail';
import { WorkflowRunsPage } from './pages/WorkflowRuns';
import { WorkspaceDetailPage } from './pages/WorkspaceDetail';
import { WorkspacesPage } from './pages/Workspaces';

export function App() {
  return (
    <Routes>
      <Route path="/login" element={<LoginPage />} />
      <Route element={<Shell />}>
        <Route index element={<HomePage />} />
        <Route path="namespaces/:ns">
          <Route index element={<Navigate to="runs" replace />} />
          <Route path="runs" element={<RunsPage />} />
          <Route path="runs/:name" element={<RunDetailPage />} />
          <Route path="runtimes" element={<RuntimesPage />} />
          <Route path="runtimes/:name" element={<RuntimeDetailPage />} />
          <Route path="workflowruns" element={<WorkflowRunsPage />} />
          <Route path="workflowruns/:wr" element={<WorkflowRunDetailPage />} />
          <Route path="workflowruns/:wr/jobs/:job" element={<JobDetailPage />} />
          <Route path="actions" element={<ActionsPage />} />
          <Route path="actions/:name" element={<ActionDetailPage />} />
          <Route path="persistentworkspaces" element={<WorkspacesPage />} />
          <Route path="persistentworkspaces/:name" element={<WorkspaceDetailPage />} />
        </Route>
        <Route path="settings" element={<SettingsPage />} />
        <Route path="about" element={<AboutPage />} />
        <Route path="*" element={<NotFoundPage />} />
      </Route>
    </Routes>
  );
}
